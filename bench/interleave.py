"""Two settings compared inside one load run (bench/parts --interleave, the operating block of
bench/run).

Separate runs of the same settings on the benchmark's shared 2-core machines differ by more than
the 2-6% the operating parts cost: how wrk's connections split between the two workers, and where
each process lands on the two cores, are drawn again at every start, and the machine's speed moves
from one minute to the next. Inside one run they stay put: the settings are switched every half
second, each phase is counted from the workers' own request counters after a settling pause, and
phases go in ABBA quads so that a drift weighs on both sides alike. Measured on the kept scale-10
cluster, everything on against off at 32 connections: whole 3 s runs gave quads from 0.87 to 1.13
and medians from 0.93 to 0.96 on the same build; 0.5 s phases gave quads within a few percent
of each other and medians of 0.934 and 0.938 in two runs.
"""
import os
import signal
import subprocess
import time

# Requests the workers have answered since they started (probes and refusals too).
ANSWERED = "SELECT coalesce(sum(requests), 0) FROM querygate.stat_workers"
CLK_TCK = os.sysconf("SC_CLK_TCK")


class Session:
    """One psql kept open: a switch or a count every half second must not start a process each."""

    def __init__(self, argv):
        self.p = subprocess.Popen([str(a) for a in argv] + ["-X", "-A", "-t", "-q", "-v", "ON_ERROR_STOP=1"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def __call__(self, sql):
        self.p.stdin.write(f"{sql};\n\\echo __end__\n")
        self.p.stdin.flush()
        out = []
        for line in self.p.stdout:
            if line.rstrip("\n") == "__end__":
                return "\n".join(out)
            out.append(line.rstrip("\n"))
        raise RuntimeError(f"psql ended at: {sql}")

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def quad_sides(q, first):
    """The sides of quad q: first, other, other, first; the next quad the other way round."""
    other = "on" if first == "off" else "off"
    a, b = (first, other) if q % 2 == 0 else (other, first)
    return (a, b, b, a)


def process_seconds(pid):
    """A running process's CPU seconds (all its threads), from /proc; 0 once it is gone."""
    try:
        stat = open(f"/proc/{pid}/stat").read()
    except OSError:
        return 0.0
    f = stat[stat.rfind(")") + 2:].split()
    return (int(f[11]) + int(f[12])) / CLK_TCK


# After a switch, how long before a phase is counted: the workers see a switched setting at their
# next round (a reload or a catalog change), and the last round of the old side drains.
SETTLE_S = 0.3


def run(load, session, switch, quads, phase, sample, settle=SETTLE_S, first="off", warmup=2.0):
    """Starts `load` (a command that runs longer than the phases, stopped with SIGINT) and, while it
    runs, `quads` ABBA quads: switch(side), `settle` seconds, then a phase of `phase` seconds counted
    by the workers. sample() is taken at each phase's start and end. Returns the phases (quad, side,
    requests, seconds, the two samples, the load's own CPU seconds) and the load's stdout and stderr."""
    p = subprocess.Popen([str(a) for a in load], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    phases = []
    try:
        time.sleep(warmup)  # connections made and caches warm before the first phase
        for q in range(quads):
            for side in quad_sides(q, first):
                switch(side)
                time.sleep(settle)
                before, load0, n0, t0 = sample(), process_seconds(p.pid), int(session(ANSWERED)), time.monotonic()
                time.sleep(phase)
                n1, t1, load1, after = int(session(ANSWERED)), time.monotonic(), process_seconds(p.pid), sample()
                if p.poll() is not None:
                    raise RuntimeError("the load ended before the phases did")
                phases.append({"quad": q, "side": side, "requests": n1 - n0, "seconds": t1 - t0,
                               "before": before, "after": after, "load_cpu_s": load1 - load0})
    finally:
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    return phases, out, err


def quad_ratios(phases):
    """Each quad's on/off: the requests a second of its two "on" phases over its two "off" ones."""
    out = []
    for q in sorted({ph["quad"] for ph in phases}):
        s = {side: [0, 0.0] for side in ("on", "off")}
        for ph in phases:
            if ph["quad"] == q:
                s[ph["side"]][0] += ph["requests"]
                s[ph["side"]][1] += ph["seconds"]
        if s["on"][1] and s["off"][1] and s["off"][0]:
            out.append((s["on"][0] / s["on"][1]) / (s["off"][0] / s["off"][1]))
    return out
