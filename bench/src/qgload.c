/*
 * qgload: a small paced HTTP/1.1 load generator for the querygate benchmark.
 *
 * Open loop (-R rate): request n is due at t0 + n/rate, whatever happens to earlier requests. A
 * request that finds no idle connection waits in a queue; its latency is measured from the time it
 * was due, not from when it was sent, so a slow answer cannot hide the requests it delays
 * (coordinated omission). Closed loop (-R 0): each connection sends its next request when the last
 * one is answered, and latency is measured from the send.
 *
 * It talks only to 127.0.0.1, runs for a bounded time, keeps connections alive, and reconnects
 * (counting it) when the server closes one. Every latency is kept and sorted at the end, so the
 * percentiles are exact. The summary is one JSON object on stdout; -L writes every request as
 * "due_offset_us latency_us status" (the per-request log of the catalog-change run).
 *
 *   qgload -p PORT -c CONNS -d SECONDS [-R RATE] [-t THREADS] [-w WARMUP_S]
 *          [-m GET|POST] [-H 'Name: value']... [-b BODY] [-L FILE] PATH
 *
 * PATH and BODY may hold {LO:HI}, replaced on every request by a uniform random integer in [LO, HI].
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_HEADERS 16
#define MAX_PIECES 32
#define RBUF 65536
#define WBUF 8192

typedef struct { const char *lit; size_t len; int is_rand; long lo, hi; } piece;
typedef struct { piece p[MAX_PIECES]; int n; } tmpl;

static int port, nconns = 1, nthreads = 1;
static double rate, duration = 10, warmup;
static const char *method = "GET";
static const char *headers[MAX_HEADERS];
static int nheaders;
static tmpl path_t, body_t;
static int has_body;
static FILE *reqlog;
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;

static int64_t now_ns(void) {
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void die(const char *msg) {
	fprintf(stderr, "qgload: %s\n", msg);
	exit(2);
}

static void parse_tmpl(const char *s, tmpl *t) {
	t->n = 0;
	while (*s) {
		if (t->n >= MAX_PIECES) die("template has too many pieces");
		piece *p = &t->p[t->n++];
		const char *open = strchr(s, '{');
		long lo, hi;
		int used = 0;
		if (open == s && sscanf(s, "{%ld:%ld}%n", &lo, &hi, &used) == 2 && used > 0 && lo <= hi) {
			p->is_rand = 1; p->lo = lo; p->hi = hi; s += used;
			continue;
		}
		const char *end = open ? (open == s ? s + 1 : open) : s + strlen(s);
		p->is_rand = 0; p->lit = s; p->len = (size_t)(end - s); s = end;
	}
}

static uint64_t xorshift(uint64_t *st) {
	uint64_t x = *st;
	x ^= x << 13; x ^= x >> 7; x ^= x << 17;
	return *st = x;
}

static size_t fill_tmpl(char *out, size_t cap, const tmpl *t, uint64_t *rng) {
	size_t n = 0;
	for (int i = 0; i < t->n; i++) {
		const piece *p = &t->p[i];
		if (p->is_rand) {
			long v = p->lo + (long)(xorshift(rng) % (uint64_t)(p->hi - p->lo + 1));
			n += (size_t)snprintf(out + n, cap - n, "%ld", v);
		} else {
			if (n + p->len >= cap) die("request too long");
			memcpy(out + n, p->lit, p->len);
			n += p->len;
		}
		if (n >= cap) die("request too long");
	}
	out[n] = 0;
	return n;
}

enum { C_CONNECTING, C_IDLE, C_BUSY };

typedef struct {
	int fd, state;
	int want_out;               /* EPOLLOUT registered: only after a short write */
	int64_t due, sent;          /* when the request was due, and when it went out */
	int measured;               /* due after the warm-up, so counted */
	char w[WBUF]; size_t wlen, woff;
	char r[RBUF]; size_t rlen;
} conn;

typedef struct {
	int id;
	double rate;                /* this thread's share */
	int64_t phase_ns;
	int nc;
	conn *c;
	int ep;
	uint64_t rng;
	/* results */
	int64_t *lat; size_t nlat, caplat;
	uint64_t status[6];         /* 1xx..5xx, [0] = other */
	uint64_t non2xx, errors, reconnects, sent, unsent, timeouts, bytes;
	int64_t max_send_lag;       /* worst (send - due), open loop only */
	int64_t t0, t_end;
} worker;

static void add_lat(worker *w, int64_t v) {
	if (w->nlat == w->caplat) {
		w->caplat = w->caplat ? w->caplat * 2 : 65536;
		w->lat = realloc(w->lat, w->caplat * sizeof(int64_t));
		if (!w->lat) die("out of memory");
	}
	w->lat[w->nlat++] = v;
}

static void conn_open(worker *w, conn *c) {
	struct sockaddr_in a = {0};
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	if (c->fd < 0) die("socket failed");
	int one = 1;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	c->rlen = 0; c->wlen = c->woff = 0;
	if (connect(c->fd, (struct sockaddr *)&a, sizeof a) < 0 && errno != EINPROGRESS) die("connect failed");
	c->state = C_CONNECTING;
	c->want_out = 1;
	struct epoll_event ev = {.events = EPOLLOUT | EPOLLIN, .data.ptr = c};
	epoll_ctl(w->ep, EPOLL_CTL_ADD, c->fd, &ev);
}

static void conn_close(worker *w, conn *c) {
	epoll_ctl(w->ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	c->fd = -1;
}

static void want(worker *w, conn *c, uint32_t events) {
	struct epoll_event ev = {.events = events, .data.ptr = c};
	epoll_ctl(w->ep, EPOLL_CTL_MOD, c->fd, &ev);
}

static void do_write(worker *w, conn *c) {
	while (c->woff < c->wlen) {
		ssize_t k = write(c->fd, c->w + c->woff, c->wlen - c->woff);
		if (k < 0) {
			if (errno == EAGAIN) {
				if (!c->want_out) { want(w, c, EPOLLIN | EPOLLOUT); c->want_out = 1; }
				return;
			}
			return; /* the read side will see the error */
		}
		c->woff += (size_t)k;
	}
	if (c->want_out) { want(w, c, EPOLLIN); c->want_out = 0; }
}

static void send_req(worker *w, conn *c, int64_t due, int measured) {
	char path[4096], body[WBUF / 2];
	size_t bl = 0;
	fill_tmpl(path, sizeof path, &path_t, &w->rng);
	if (has_body) bl = fill_tmpl(body, sizeof body, &body_t, &w->rng);
	size_t n = (size_t)snprintf(c->w, WBUF, "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n", method, path, port);
	for (int i = 0; i < nheaders; i++) n += (size_t)snprintf(c->w + n, WBUF - n, "%s\r\n", headers[i]);
	if (has_body) n += (size_t)snprintf(c->w + n, WBUF - n, "Content-Length: %zu\r\n", bl);
	n += (size_t)snprintf(c->w + n, WBUF - n, "\r\n");
	if (n + bl >= WBUF) die("request too long");
	memcpy(c->w + n, body, bl);
	c->wlen = n + bl; c->woff = 0;
	c->state = C_BUSY;
	c->due = due;
	c->sent = now_ns();
	c->measured = measured;
	c->rlen = 0;
	w->sent++;
	if (rate > 0 && measured && c->sent - due > w->max_send_lag) w->max_send_lag = c->sent - due;
	do_write(w, c);
}

/* Returns 1 when a whole response is in the buffer: sets *status, *close_after, *consumed. */
static int parse_resp(conn *c, int *status, int *close_after, size_t *consumed, int eof) {
	char *hend = memmem(c->r, c->rlen, "\r\n\r\n", 4);
	if (!hend) return 0;
	size_t hlen = (size_t)(hend - c->r) + 4;
	if (c->rlen < 12 || strncmp(c->r, "HTTP/1.", 7)) return -1;
	*status = atoi(c->r + 9);
	long clen = -1;
	int chunked = 0;
	*close_after = (c->r[7] == '0');
	for (char *line = memchr(c->r, '\n', hlen) + 1; line < c->r + hlen - 2;) {
		char *eol = memchr(line, '\n', (size_t)(c->r + hlen - line));
		if (!eol) break;
		if (!strncasecmp(line, "content-length:", 15)) clen = atol(line + 15);
		else if (!strncasecmp(line, "transfer-encoding:", 18) && memmem(line, (size_t)(eol - line), "chunked", 7)) chunked = 1;
		else if (!strncasecmp(line, "connection:", 11)) {
			if (memmem(line, (size_t)(eol - line), "close", 5)) *close_after = 1;
			else if (memmem(line, (size_t)(eol - line), "keep-alive", 10)) *close_after = 0;
		}
		line = eol + 1;
	}
	if (*status == 204 || *status == 304 || (*status >= 100 && *status < 200)) clen = 0;
	if (chunked) {
		size_t p = hlen;
		for (;;) {
			char *e = memmem(c->r + p, c->rlen - p, "\r\n", 2);
			if (!e) return 0;
			long sz = strtol(c->r + p, NULL, 16);
			p = (size_t)(e - c->r) + 2;
			if (sz == 0) {
				/* trailers end with an empty line */
				for (;;) {
					char *t = memmem(c->r + p, c->rlen - p, "\r\n", 2);
					if (!t) return 0;
					size_t tl = (size_t)(t - (c->r + p));
					p += tl + 2;
					if (tl == 0) { *consumed = p; return 1; }
				}
			}
			if (c->rlen < p + (size_t)sz + 2) return 0;
			p += (size_t)sz + 2;
		}
	}
	if (clen >= 0) {
		if (c->rlen < hlen + (size_t)clen) return 0;
		*consumed = hlen + (size_t)clen;
		return 1;
	}
	/* no length: the body ends when the server closes */
	if (!eof) return 0;
	*close_after = 1;
	*consumed = c->rlen;
	return 1;
}

static void finish(worker *w, conn *c, int status, int64_t t) {
	if (c->measured) {
		int64_t from = rate > 0 ? c->due : c->sent;
		add_lat(w, t - from);
		int cls = status / 100;
		w->status[(cls >= 1 && cls <= 5) ? cls : 0]++;
		if (cls != 2) w->non2xx++;
		if (reqlog) {
			pthread_mutex_lock(&log_mu);
			fprintf(reqlog, "%" PRId64 " %" PRId64 " %d\n", (c->due - w->t0) / 1000, (t - from) / 1000, status);
			pthread_mutex_unlock(&log_mu);
		}
	}
	c->state = C_IDLE;
}

static void fail(worker *w, conn *c) {
	if (c->state == C_BUSY && c->measured) w->errors++;
	conn_close(w, c);
	w->reconnects++;
	conn_open(w, c);
}

static void on_readable(worker *w, conn *c) {
	for (;;) {
		if (c->rlen == RBUF) { fail(w, c); return; }
		ssize_t k = read(c->fd, c->r + c->rlen, RBUF - c->rlen);
		int eof = 0;
		if (k < 0) {
			if (errno == EAGAIN) return;
			fail(w, c);
			return;
		}
		if (k == 0) eof = 1;
		c->rlen += (size_t)k;
		w->bytes += (uint64_t)k;
		if (c->state != C_BUSY) {
			if (eof) { conn_close(w, c); w->reconnects++; conn_open(w, c); }
			return; /* stray bytes on an idle connection are dropped */
		}
		int status, close_after;
		size_t used;
		int r = parse_resp(c, &status, &close_after, &used, eof);
		if (r < 0) { fail(w, c); return; }
		if (r == 0) {
			if (eof) fail(w, c);
			if (eof || k == 0) return;
			continue;
		}
		finish(w, c, status, now_ns());
		if (close_after || eof) {
			conn_close(w, c);
			w->reconnects++;
			conn_open(w, c);
			return;
		}
		c->rlen = 0;
		return;
	}
}

static void *run_worker(void *arg) {
	worker *w = arg;
	prctl(PR_SET_TIMERSLACK, 1UL); /* wake at the due time, not up to 50 µs later */
	w->ep = epoll_create1(0);
	w->c = calloc((size_t)w->nc, sizeof(conn));
	for (int i = 0; i < w->nc; i++) conn_open(w, &w->c[i]);
	int64_t start = w->t0;
	int64_t measure_from = start + (int64_t)(warmup * 1e9);
	int64_t stop_sending = measure_from + (int64_t)(duration * 1e9);
	/* after the run, the queue and the requests in flight get this long to finish */
	int64_t drain_until = stop_sending + (int64_t)(fmax(5.0, duration / 2) * 1e9);
	double interval = w->rate > 0 ? 1e9 / w->rate : 0;
	uint64_t next = 0;   /* index of the next request to send, open loop */
	struct epoll_event evs[256];
	for (;;) {
		int64_t t = now_ns();
		/* hand due requests to idle connections */
		int busy = 0, idle = 0;
		for (int i = 0; i < w->nc; i++) {
			conn *c = &w->c[i];
			if (c->state == C_IDLE) {
				if (w->rate > 0) {
					int64_t due = start + w->phase_ns + (int64_t)(next * interval);
					if (due <= t && (due < stop_sending)) {
						send_req(w, c, due, due >= measure_from);
						next++;
					}
				} else if (t < stop_sending) {
					send_req(w, c, t, t >= measure_from);
				}
			}
			if (c->state == C_BUSY) busy++;
			else if (c->state == C_IDLE) idle++;
		}
		int64_t due_next = w->rate > 0 ? start + w->phase_ns + (int64_t)(next * interval) : INT64_MAX;
		int sending = (w->rate > 0 ? due_next < stop_sending : t < stop_sending);
		if (!sending && busy == 0) break;
		if (t >= drain_until) {
			for (int i = 0; i < w->nc; i++) if (w->c[i].state == C_BUSY && w->c[i].measured) w->timeouts++;
			break;
		}
		/* sleep until the next request is due or a connection has something; never spin, the
		 * generator shares the machine's cores with the server it measures */
		int64_t wait_ns = 100000000;
		if (w->rate > 0 && sending && idle > 0) {
			/* with no idle connection, a due request waits for an answer: no timer needed */
			int64_t d = due_next - t;
			wait_ns = d <= 0 ? 0 : d;
		}
		struct timespec ts = {.tv_sec = wait_ns / 1000000000, .tv_nsec = wait_ns % 1000000000};
		int n = epoll_pwait2(w->ep, evs, 256, &ts, NULL);
		for (int i = 0; i < n; i++) {
			conn *c = evs[i].data.ptr;
			if (c->state == C_CONNECTING) {
				int err = 0; socklen_t l = sizeof err;
				getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l);
				if (err) die("cannot connect to 127.0.0.1 (is the server up?)");
				c->state = C_IDLE;
				want(w, c, EPOLLIN);
				c->want_out = 0;
				continue;
			}
			if (evs[i].events & EPOLLOUT && c->state == C_BUSY && c->woff < c->wlen) do_write(w, c);
			if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) on_readable(w, c);
		}
	}
	if (w->rate > 0) {
		/* requests that were due before the end but never went out */
		int64_t due;
		while ((due = start + w->phase_ns + (int64_t)(next * interval)) < stop_sending) {
			if (due >= measure_from) w->unsent++;
			next++;
		}
	}
	w->t_end = now_ns();
	for (int i = 0; i < w->nc; i++) if (w->c[i].fd >= 0) close(w->c[i].fd);
	close(w->ep);
	return NULL;
}

static int cmp64(const void *a, const void *b) {
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
	return (x > y) - (x < y);
}

static double pct(const int64_t *v, size_t n, double p) {
	if (!n) return NAN;
	size_t i = (size_t)ceil(p / 100.0 * (double)n);
	if (i < 1) i = 1;
	if (i > n) i = n;
	return (double)v[i - 1] / 1000.0; /* µs */
}

int main(int argc, char **argv) {
	int opt;
	const char *logpath = NULL;
	while ((opt = getopt(argc, argv, "p:c:d:R:t:w:m:H:b:L:")) != -1) {
		switch (opt) {
		case 'p': port = atoi(optarg); break;
		case 'c': nconns = atoi(optarg); break;
		case 'd': duration = atof(optarg); break;
		case 'R': rate = atof(optarg); break;
		case 't': nthreads = atoi(optarg); break;
		case 'w': warmup = atof(optarg); break;
		case 'm': method = optarg; break;
		case 'H': if (nheaders == MAX_HEADERS) die("too many headers"); headers[nheaders++] = optarg; break;
		case 'b': parse_tmpl(optarg, &body_t); has_body = 1; break;
		case 'L': logpath = optarg; break;
		default: die("usage: qgload -p PORT -c CONNS -d SECONDS [-R RATE] [-t THREADS] [-w WARMUP] [-m METHOD] [-H HEADER]... [-b BODY] [-L LOG] PATH");
		}
	}
	if (optind != argc - 1) die("one PATH is needed");
	if (port <= 0 || port > 65535) die("-p PORT is needed");
	if (nconns < 1 || nthreads < 1 || nthreads > nconns) die("need 1 <= threads <= connections");
	if (duration <= 0 || duration > 3600 || warmup < 0 || warmup > 600) die("duration must be in (0, 3600] s, warm-up in [0, 600] s");
	if (rate < 0 || rate > 1e7) die("rate out of range");
	parse_tmpl(argv[optind], &path_t);
	if (logpath && !(reqlog = fopen(logpath, "w"))) die("cannot open the log file");

	worker *ws = calloc((size_t)nthreads, sizeof(worker));
	pthread_t *th = calloc((size_t)nthreads, sizeof(pthread_t));
	int64_t t0 = now_ns() + 50000000; /* let every thread connect first */
	for (int i = 0; i < nthreads; i++) {
		ws[i].id = i;
		ws[i].rate = rate / nthreads;
		ws[i].phase_ns = rate > 0 ? (int64_t)(1e9 / rate * i) : 0;
		ws[i].nc = nconns / nthreads + (i < nconns % nthreads);
		ws[i].rng = 0x9E3779B97F4A7C15ull ^ ((uint64_t)(now_ns()) * (uint64_t)(i + 1));
		ws[i].t0 = t0;
		pthread_create(&th[i], NULL, run_worker, &ws[i]);
	}
	worker tot = {0};
	int64_t t_end = 0;
	for (int i = 0; i < nthreads; i++) {
		pthread_join(th[i], NULL);
		worker *w = &ws[i];
		for (size_t k = 0; k < w->nlat; k++) add_lat(&tot, w->lat[k]);
		for (int k = 0; k < 6; k++) tot.status[k] += w->status[k];
		tot.non2xx += w->non2xx; tot.errors += w->errors; tot.reconnects += w->reconnects;
		tot.sent += w->sent; tot.unsent += w->unsent; tot.timeouts += w->timeouts; tot.bytes += w->bytes;
		if (w->max_send_lag > tot.max_send_lag) tot.max_send_lag = w->max_send_lag;
		if (w->t_end > t_end) t_end = w->t_end;
	}
	if (reqlog) fclose(reqlog);
	qsort(tot.lat, tot.nlat, sizeof(int64_t), cmp64);
	double sum = 0;
	for (size_t k = 0; k < tot.nlat; k++) sum += (double)tot.lat[k];
	char lat[512];
	if (tot.nlat)
		snprintf(lat, sizeof lat, "{\"mean\":%.1f,\"p50\":%.1f,\"p90\":%.1f,\"p99\":%.1f,\"p99.9\":%.1f,\"p99.99\":%.1f,\"max\":%.1f}",
		         sum / (double)tot.nlat / 1000.0, pct(tot.lat, tot.nlat, 50), pct(tot.lat, tot.nlat, 90),
		         pct(tot.lat, tot.nlat, 99), pct(tot.lat, tot.nlat, 99.9), pct(tot.lat, tot.nlat, 99.99),
		         (double)tot.lat[tot.nlat - 1] / 1000.0);
	else
		snprintf(lat, sizeof lat, "null");
	printf("{\"tool\":\"qgload\",\"mode\":\"%s\",\"rate_offered\":%.1f,\"connections\":%d,\"threads\":%d,"
	       "\"duration_s\":%.3f,\"warmup_s\":%.3f,\"completed\":%zu,\"rps\":%.1f,"
	       "\"status\":{\"1xx\":%" PRIu64 ",\"2xx\":%" PRIu64 ",\"3xx\":%" PRIu64 ",\"4xx\":%" PRIu64 ",\"5xx\":%" PRIu64 ",\"other\":%" PRIu64 "},"
	       "\"non2xx\":%" PRIu64 ",\"errors\":%" PRIu64 ",\"timeouts\":%" PRIu64 ",\"unsent\":%" PRIu64 ",\"reconnects\":%" PRIu64 ","
	       "\"max_send_lag_us\":%.1f,\"bytes_read\":%" PRIu64 ",\"t0_monotonic_ns\":%" PRId64 ",\"latency_us\":%s}\n",
	       rate > 0 ? "open" : "closed", rate, nconns, nthreads, duration, warmup, tot.nlat,
	       (double)tot.nlat / duration,
	       tot.status[1], tot.status[2], tot.status[3], tot.status[4], tot.status[5], tot.status[0],
	       tot.non2xx, tot.errors, tot.timeouts, tot.unsent, tot.reconnects,
	       (double)tot.max_send_lag / 1000.0, tot.bytes, t0, lat);
	(void)t_end;
	return 0;
}
