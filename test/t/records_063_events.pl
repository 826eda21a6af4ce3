# GET /events (issue 18, point 3): server-sent events of every call's outcome. Who may open a stream
# (401 without credentials, 403 events_not_granted without grant_events, 405 for other methods;
# X-API-Key, Bearer and ?access_token=); the stream's head and first bytes; a run event's fields,
# with the call's X-Request-Id and its error code (an MCP tools/call's too), and never a
# parameter's or a row's value; only the events of the queries the stream's policy is granted,
# checked again at each delivery, and of whose calls its grant says (its own by default; its
# policy's in its tenant with grant_events(..., 'policy')); resuming
# with Last-Event-ID or ?last_event_id= (exactly the later events, in order; a gap event for those
# the ring of querygate.event_buffer no longer holds); keep-alive comments; the caps per key (429
# too_many_streams, freed when a client goes) and per worker (503 streams_full, reloaded); open
# streams do not hold the one worker; revoking events or the key ends a stream with an end event;
# the npm package eventsource's EventSource (test/clients/events_client.mjs) receives events with a
# key in X-API-Key (its fetch option) or ?access_token=, and reconnects by itself with
# Last-Event-ID, getting what it missed; a fast stop with streams open does not hang; and
# querygate.event_buffer = 0 turns the endpoint off.
#
# Streams are read here over raw sockets (the chunked body decoded, the event-stream text parsed);
# each stream gets a key of its own unless a test is about the per-key cap. Absence is proven by
# order: a stream has not seen an event when a later event has arrived and it was not before it.
use strict;
use warnings;
use FindBin;
use IO::Select;
use IPC::Run;
use JSON::PP;
use List::Util qw(min);
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);
use QuerygateTest;

my $clients = "$FindBin::Bin/../clients";
my $node_bin = "$clients/node_modules/.bin/node";
my $WAIT = timeouts(10);    # how long an expected event may take to arrive

# Values that must never be in a stream: a parameter's, a row's, and a refused parameter's.
my $PARAM_MARK = 'paramvalue_zq7x31kw';
my $ROW_MARK = 'rowvalue_quillfeather_5521';
my $BAD_MARK = 'badvalue_9vj2mpl0';

my $qg = QuerygateTest->start(name => 'events', workers => 1,
	conf => "querygate.event_buffer = 16\n"
	  . "querygate.event_keepalive = 1\n"
	  . "querygate.max_event_streams_per_key = 2\n");
$qg->sql(qq{
	CREATE TABLE ev_items (id int PRIMARY KEY, label text);
	INSERT INTO ev_items VALUES (1, '$ROW_MARK'), (2, 'plain');
	SELECT querygate.save_query('ev_item', 'SELECT id, label FROM ev_items WHERE id = :id AND label <> :tag',
	  NULL, '{"id": {"type": "integer"}}');
	SELECT querygate.save_query('ev_ping', 'SELECT 1 AS one');
	SELECT querygate.save_query('ev_secret', 'SELECT 42 AS answer');
});
$qg->role('ev_role', select => ['ev_items']);
my $k1 = $qg->access(policy => 'ev_pol', run_as => 'ev_role', queries => [qw(ev_item ev_ping)]);
my $k_other = $qg->access(policy => 'ev_other', run_as => 'ev_role', queries => ['ev_secret']);
my $k_third = $qg->access(policy => 'ev_third', run_as => 'ev_role', queries => ['ev_item']);

my $keyn = 0;
# A new key of a policy (its own stream cap); named => 1 also returns its name.
sub new_key
{
	my ($policy, %o) = @_;
	my $name = $policy . '_stream' . ++$keyn;
	my $secret = $qg->access(policy => $policy, key => $name);
	return $o{named} ? ($secret, $name) : $secret;
}

# ---------------------------------------------------------------- a stream over a raw socket

# Reads what the socket has within $timeout seconds into {raw} (and {wire}, everything received);
# returns the bytes read, 0 at end of file (and sets {closed}).
sub read_some
{
	my ($s, $timeout) = @_;
	return 0 if $s->{closed};
	return '' unless IO::Select->new($s->{sock})->can_read($timeout > 0 ? $timeout : 0);
	my $n = sysread($s->{sock}, my $buf, 65536);
	if (!$n)
	{
		$s->{closed} = 1;
		return 0;
	}
	$s->{raw} .= $buf;
	$s->{wire} .= $buf;
	return $n;
}

# Moves the body's bytes from {raw} to {body}: chunked decoded ({ended} once the last chunk came),
# otherwise as they are.
sub decode_body
{
	my ($s) = @_;
	if (!$s->{chunked})
	{
		$s->{body} .= $s->{raw};
		$s->{raw} = '';
		return;
	}
	while (!$s->{ended})
	{
		if ($s->{chunk_left} > 0)
		{
			last unless length $s->{raw};
			my $part = substr($s->{raw}, 0, $s->{chunk_left}, '');
			$s->{body} .= $part;
			$s->{chunk_left} -= length $part;
			$s->{crlf} = 1 if $s->{chunk_left} == 0;
		}
		elsif ($s->{crlf})
		{
			last if length $s->{raw} < 2;
			my $crlf = substr($s->{raw}, 0, 2, '');
			$s->{framing_error} = 'no CRLF after a chunk' unless $crlf eq "\r\n";
			$s->{crlf} = 0;
		}
		elsif ($s->{raw} =~ s/^([0-9a-fA-F]+)[^\r\n]*\r\n//)
		{
			my $len = hex $1;
			if ($len == 0)
			{
				$s->{ended} = 1;
				last;
			}
			$s->{chunk_left} = $len;
		}
		else
		{
			$s->{framing_error} = 'not a chunk size: ' . substr($s->{raw}, 0, 40)
			  if $s->{raw} =~ /\r\n/ || length $s->{raw} > 40;
			last;
		}
	}
}

# Opens GET /events (or path => ..., method => ...) on a new connection and reads the answer's head;
# a refusal (or a HEAD) is read whole. Returns the stream:
#   {status, headers (lower-case names), body (decoded), wire (every byte), closed, ended}
# and for a refusal, HTTP::Tiny's shape too ({content}, {json}) for expect_error.
sub open_stream
{
	my (%o) = @_;
	my $method = $o{method} // 'GET';
	my $path = $o{path} // '/events';
	my $sock = ($o{qg} // $qg)->connect_raw;
	my $req = "$method $path HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n";
	$req .= "X-API-Key: $o{key}\r\n" if defined $o{key};
	$req .= "Authorization: Bearer $o{bearer}\r\n" if defined $o{bearer};
	$req .= "$_: $o{headers}{$_}\r\n" for sort keys %{ $o{headers} // {} };
	$req .= "Content-Length: 0\r\n" if $method eq 'POST';
	syswrite($sock, "$req\r\n");
	my $s = { sock => $sock, raw => '', wire => '', body => '', status => 'none', headers => {},
		closed => 0, ended => 0, chunk_left => 0, crlf => 0 };
	my $deadline = time() + $WAIT;
	while ($s->{raw} !~ /\r\n\r\n/ && time() < $deadline)
	{
		last if read_some($s, $deadline - time()) eq '0';
	}
	return $s unless $s->{raw} =~ s/^(.*?)\r\n\r\n//s;
	my $head = $1;
	($s->{status}) = $head =~ m{^HTTP/1\.\d (\d{3})};
	for my $line (split /\r\n/, $head)
	{
		next unless $line =~ /^([^:]+):\s*(.*?)\s*$/;
		my $name = lc $1;
		$s->{headers}{$name} = exists $s->{headers}{$name} ? "$s->{headers}{$name}, $2" : $2;
	}
	$s->{chunked} = ($s->{headers}{'transfer-encoding'} // '') =~ /chunked/i;
	if ($method eq 'HEAD')
	{
		$s->{content} = '';
	}
	elsif (($s->{status} // '') ne '200')
	{
		my $len = $s->{headers}{'content-length'};
		while (time() < $deadline)
		{
			decode_body($s);
			last if $s->{closed} || $s->{ended};
			last if defined $len && length $s->{body} >= $len;
			last if read_some($s, $deadline - time()) eq '0';
		}
		decode_body($s);
		$s->{content} = $s->{body};
		$s->{json} = json_decode($s->{body});
	}
	else
	{
		decode_body($s);
	}
	return $s;
}

sub close_stream { my ($s) = @_; close $s->{sock} if $s->{sock}; $s->{sock} = undef; $s->{closed} = 1; }

# Reads the stream until $cond->($s) holds, the peer closes, or $timeout seconds pass; returns
# whether $cond held.
sub stream_wait
{
	my ($s, $cond, $timeout) = @_;
	my $deadline = time() + ($timeout // $WAIT);
	while (1)
	{
		decode_body($s);
		return 1 if $cond->($s);
		return 0 if $s->{closed} || time() >= $deadline;
		read_some($s, min(0.25, $deadline - time()));
	}
}

# The stream's complete blocks (the event-stream format of the HTML standard): events
# {type, id, data, json} (type 'message' when no event field), comments {type => 'comment', text},
# and {type => 'retry', retry}.
sub blocks
{
	my ($s) = @_;
	my $text = $s->{body};
	$text =~ s/\r\n?/\n/g;
	my @out;
	while ($text =~ /\G(.*?)\n\n/gs)
	{
		my %b;
		my @data;
		my @comments;
		for my $line (split /\n/, $1)
		{
			if ($line =~ /^:\s?(.*)$/) { push @comments, $1; next; }
			my ($field, $value) = $line =~ /^([^:]*)(?::\s?(.*))?$/;
			$value //= '';
			if ($field eq 'data') { push @data, $value; }
			elsif ($field eq 'id' || $field eq 'event' || $field eq 'retry') { $b{$field} = $value; }
		}
		if (@data)
		{
			my $data = join("\n", @data);
			push @out, { type => $b{event} // 'message', id => $b{id}, data => $data, json => json_decode($data) };
		}
		elsif (defined $b{retry})
		{
			push @out, { type => 'retry', retry => $b{retry} };
		}
		elsif (@comments)
		{
			push @out, { type => 'comment', text => join("\n", @comments) };
		}
	}
	return @out;
}

sub events_of { my ($s, @types) = @_; my %t = map { $_ => 1 } @types; return grep { $t{ $_->{type} } } blocks($s); }
sub runs { return events_of($_[0], 'run'); }
sub run_of { my ($s, $rid) = @_; my ($e) = grep { ($_->{json}{request_id} // '') eq $rid } runs($s); return $e; }
sub wait_run { my ($s, $rid, $timeout) = @_; return stream_wait($s, sub { run_of($s, $rid) }, $timeout); }
sub rids { return map { $_->{json}{request_id} } @_; }
sub ids { return map { $_->{id} } @_; }

# A stream that must open: 200 and its first bytes, or a failure that says what came.
sub must_open
{
	my ($name, %o) = @_;
	my $s = open_stream(%o);
	my $ok = ($s->{status} // '') eq '200' && stream_wait($s, sub { length $s->{body} >= 13 });
	ok($ok, "$name: the stream opens") or diag("status $s->{status}: " . substr($s->{wire}, 0, 500));
	return $s;
}

# Opens a stream with a new key of ev_pol, again and again until one opens (a worker gives a place
# back a moment after its connection closes) or $timeout passes: (whether it opened, the last try).
sub open_when_free
{
	my ($timeout) = @_;
	my $s;
	my $ok = QuerygateTest::poll_until(sub {
		$s = open_stream(key => new_key('ev_pol'));
		return 1 if ($s->{status} // '') eq '200';
		close_stream($s);
		return 0;
	}, $timeout);
	return ($ok, $s);
}

# An open stream's refusal as expect_error sees it.
sub refused { my ($s) = @_; close_stream($s); return $s; }

# A call of a saved query; returns the response and its X-Request-Id.
sub call
{
	my ($query, $key, %params) = @_;
	my $res = $qg->get("/q/$query" . query_string(map { $_ => $params{$_} } sort keys %params), key => $key);
	return ($res, $res->{headers}{'x-request-id'} // '(none)');
}

# ---------------------------------------------------------------- 1. who may open a stream

$qg->expect_error(refused(open_stream()), 401, 'unauthorized', 'GET /events without credentials');
$qg->expect_error(refused(open_stream(key => 'qg_not_a_key')), 401, 'unauthorized', 'GET /events with a key that is not one');
$qg->expect_error(refused(open_stream(key => $k1)), 403, 'events_not_granted', 'a key whose policy has no grant_events');
$qg->expect_error(refused(open_stream(key => $k1, method => 'POST')), 405, 'method_not_allowed', 'POST /events');
$qg->sql(q{SELECT querygate.grant_events('ev_pol', 'policy'); SELECT querygate.grant_events('ev_other', 'policy')});
is($qg->sql(q{SELECT string_agg(name || '=' || events, ',' ORDER BY name) FROM querygate.policies}),
	'ev_other=true,ev_pol=true,ev_third=false', 'querygate.policies shows events');

my $s1 = open_stream(key => $k1);
is($s1->{status}, 200, 'after grant_events: 200') or diag(substr($s1->{wire}, 0, 500));
is($s1->{headers}{'content-type'}, 'text/event-stream', 'Content-Type: text/event-stream');
is($s1->{headers}{'cache-control'}, 'no-store', 'Cache-Control: no-store');
like($s1->{headers}{'x-request-id'} // '', qr/\S/, 'an X-Request-Id');
is(lc($s1->{headers}{'transfer-encoding'} // ''), 'chunked', 'chunked');
stream_wait($s1, sub { length $s1->{body} >= 13 });
is(substr($s1->{body}, 0, 13), "retry: 3000\n\n", 'the first bytes: retry: 3000');

my $sb = must_open('Authorization: Bearer <key>', bearer => new_key('ev_pol'));
is(substr($sb->{body}, 0, 13), "retry: 3000\n\n", 'Bearer: retry first');
close_stream($sb);
my $sa = must_open('?access_token=<key>', path => '/events' . query_string(access_token => new_key('ev_pol')));
is(substr($sa->{body}, 0, 13), "retry: 3000\n\n", '?access_token=: retry first');
close_stream($sa);
$qg->expect_error(refused(open_stream(path => '/events?access_token=qg_not_a_key')), 401, 'unauthorized',
	'?access_token= with a key that is not one');
my $head = open_stream(method => 'HEAD', key => new_key('ev_pol'));
is(($head->{status} // 'none') . ' ' . ($head->{headers}{'content-type'} // ''), '200 text/event-stream', 'HEAD /events: 200, text/event-stream');
close_stream($head);

# ---------------------------------------------------------------- 2. run events

my $s_other = must_open('a stream of ev_other', key => $k_other);
my ($ok_res, $rid_ok) = call('ev_item', $k1, id => 1, tag => $PARAM_MARK);
$qg->expect_rows($ok_res, [ { id => 1, label => $ROW_MARK } ], 'a granted call (a row holding the row mark)');
my ($bad_res, $rid_bad) = call('ev_item', $k1, id => $BAD_MARK, tag => 'x');
is($bad_res->{status}, 400, 'a call with a refused parameter: 400');
my $bad_code = $bad_res->{json}{code} // '(none)';
like($bad_code, qr/^[a-z_]+$/, "with a code ($bad_code)");
ok(wait_run($s1, $rid_bad), 'the stream receives the calls\' run events') or diag($s1->{body});
my $e_ok = run_of($s1, $rid_ok);
my $e_bad = run_of($s1, $rid_bad);
ok($e_ok, 'a run event with the call\'s X-Request-Id as request_id');
my $j = $e_ok ? $e_ok->{json} : {};
is_deeply([ sort keys %$j ], [qw(at_us code duration_us id kind query request_id rows status)], 'its fields');
like($e_ok->{id} // '', qr/^[1-9]\d*$/, 'an id: line');
is($j->{id}, $e_ok->{id}, 'data.id is the id: line');
is($j->{query}, 'ev_item', 'query');
is($j->{status}, 200, 'status 200');
ok(exists $j->{code} && !defined $j->{code}, 'code null');
like($j->{duration_us} // '', qr/^\d+$/, 'duration_us a whole number');
is($j->{rows}, 1, 'rows 1');
is($j->{request_id}, $rid_ok, 'request_id = X-Request-Id');
ok(defined $j->{at_us} && $j->{at_us} =~ /^\d+$/ && abs($j->{at_us} / 1e6 - time()) < 60, 'at_us: µs since the epoch, now')
  or diag("at_us $j->{at_us}, now " . time());
like($e_ok->{data}, qr/"code":null/, 'code is a JSON null on the wire');
my $jb = $e_bad ? $e_bad->{json} : {};
is(join(' ', map { $_ // 'null' } @$jb{qw(query status code request_id)}), "ev_item 400 $bad_code $rid_bad",
	'the error call: its status and the code string');
ok($e_ok && $e_bad && $e_ok->{id} < $e_bad->{id}, 'in call order, ids increasing');
is(scalar(grep { $s1->{wire} =~ /\Q$_\E/ } $PARAM_MARK, $ROW_MARK, $BAD_MARK), 0,
	'no parameter value, refused value or row value anywhere in the stream');

# An ungranted query's event (ev_secret, granted to ev_other only) is not sent to ev_pol's stream.
my (undef, $rid_sec) = call('ev_secret', $k_other);
my (undef, $rid_ping) = call('ev_ping', $k1);
ok(wait_run($s1, $rid_ping), 'the granted call after an ungranted one arrives');
ok(wait_run($s_other, $rid_sec), 'the ungranted call made an event: a stream of ev_other has it');
my $sec_id = run_of($s_other, $rid_sec) ? run_of($s_other, $rid_sec)->{id} : -1;
is_deeply([ grep { $_->{id} == $sec_id || $_->{json}{query} ne 'ev_item' && $_->{json}{query} ne 'ev_ping' } runs($s1) ],
	[], 'ev_pol\'s stream never got ev_secret\'s event (its id is skipped)');
my (undef, $rid_sec2) = call('ev_secret', $k_other);
ok(wait_run($s_other, $rid_sec2), 'a later ev_secret event reaches ev_other');
is_deeply([ rids(runs($s_other)) ], [ $rid_sec, $rid_sec2 ], 'ev_other\'s stream has only its query\'s events');

# An MCP tools/call is a call of its query like any other: its run event, with its request id.
my $mcp = $qg->post('/mcp', { jsonrpc => '2.0', id => 1, method => 'tools/call',
	params => { name => 'ev_ping', arguments => {} } }, key => $k1);
ok($mcp->{json}{result} && !$mcp->{json}{result}{isError}, 'an MCP tools/call of a granted query answers')
  or diag($mcp->{content});
my $rid_mcp = $mcp->{headers}{'x-request-id'} // '(none)';
ok(wait_run($s1, $rid_mcp), 'an MCP tools/call makes a run event');
is(join(' ', map { run_of($s1, $rid_mcp) ? run_of($s1, $rid_mcp)->{json}{$_} // 'null' : '' } qw(query status code)),
	'ev_ping 200 null', 'with its query and status');

# ---------------------------------------------------------------- 3. resuming

my $r1 = must_open('Last-Event-ID of an earlier event', key => new_key('ev_pol'),
	headers => { 'Last-Event-ID' => $e_ok ? $e_ok->{id} : 0 });
my (undef, $rid_s1) = call('ev_ping', $k1);
ok(wait_run($r1, $rid_s1), 'then a new call');
is_deeply([ rids(runs($r1)) ], [ $rid_bad, $rid_ping, $rid_mcp, $rid_s1 ],
	'exactly the later events the policy may see, in order, then the new one');
is_deeply([ events_of($r1, 'gap') ], [], 'no gap');
my $ping_id = run_of($s1, $rid_ping) ? run_of($s1, $rid_ping)->{id} : 0;
my $r2 = must_open('?last_event_id=', key => new_key('ev_pol'), path => "/events?last_event_id=$ping_id");
my (undef, $rid_s2) = call('ev_ping', $k1);
ok(wait_run($r2, $rid_s2), '?last_event_id=: then a new call');
is_deeply([ rids(runs($r2)) ], [ $rid_mcp, $rid_s1, $rid_s2 ], '?last_event_id=: exactly the later events');
my $r3 = must_open('a Last-Event-ID that is not a number', key => new_key('ev_pol'),
	headers => { 'Last-Event-ID' => 'abc' });
my (undef, $rid_s3) = call('ev_ping', $k1);
ok(wait_run($r3, $rid_s3), 'Last-Event-ID abc: a new call arrives');
is_deeply([ rids(runs($r3)) ], [$rid_s3], 'Last-Event-ID abc is ignored: events from now on');
my $l0 = run_of($r3, $rid_s3) ? run_of($r3, $rid_s3)->{id} : 0;
close_stream($_) for $s_other, $r1, $r2, $r3, $s1;

# 20 calls since $l0 with a ring of 16: the first 4 are lost.
my @g = map { (call('ev_ping', $k1))[1] } 1 .. 20;
my $rg = must_open('Last-Event-ID older than the ring holds', key => new_key('ev_pol'),
	headers => { 'Last-Event-ID' => $l0 });
ok(wait_run($rg, $g[19]), 'the backlog arrives');
my @got = events_of($rg, qw(run gap end));
my $gap = $got[0] // {};
is($gap->{type}, 'gap', 'a gap event first');
is_deeply($gap->{json}, { from => $l0 + 1, to => $l0 + 4 }, 'from: the first lost id, to: the last (16 kept of 20)');
is($gap->{id}, $l0 + 4, 'with id: the last lost id');
is_deeply([ rids(@got[ 1 .. $#got ]) ], [ @g[ 4 .. 19 ] ], 'then exactly the 16 events the ring holds, in order');
is_deeply([ ids(@got[ 1 .. $#got ]) ], [ $l0 + 5 .. $l0 + 20 ], 'with ids one after another');
close_stream($rg);

# ---------------------------------------------------------------- 4. keep-alive

my $ka = must_open('an idle stream', key => new_key('ev_pol'));
my $t0 = time();
my $two = stream_wait($ka, sub { (grep { $_->{text} eq 'keep-alive' } events_of($ka, 'comment')) >= 2 }, timeouts(6));
ok($two, 'with event_keepalive = 1, an idle stream gets ": keep-alive" comments (2 within ' . sprintf('%.1f', time() - $t0) . ' s)')
  or diag($ka->{body});
like($ka->{body}, qr/^retry: 3000\n\n(?:: keep-alive\n\n)+\z/, 'and nothing else');
close_stream($ka);

# ---------------------------------------------------------------- 5. caps

my $kc = new_key('ev_pol');
my $ca = must_open('a key\'s first stream', key => $kc);
my $cb = must_open('its second', key => $kc);
$qg->expect_error(refused(open_stream(key => $kc)), 429, 'too_many_streams', 'its third, past max_event_streams_per_key = 2');
close_stream($ca);
my $cc;
my $freed = QuerygateTest::poll_until(
	sub {
		$cc = open_stream(key => $kc);
		return 1 if ($cc->{status} // '') eq '200';
		close_stream($cc);
		return 0;
	},
	timeouts(10));
ok($freed, 'a stream its client closed frees a place (found at the next keep-alive)')
  or diag("status $cc->{status}: $cc->{content}");
$qg->expect_error(refused(open_stream(key => $kc)), 429, 'too_many_streams', 'and two open again: the next is refused');
close_stream($_) for $cb, $cc;

# ---------------------------------------------------------------- 6. streams do not hold the worker

is(scalar @{ $qg->worker_pids }, 1, 'one HTTP worker');
my @open = map { must_open("stream $_ of 5", key => new_key('ev_pol')) } 1 .. 5;
my $slowest = 0;
my @statuses;
my $last_rid;
for (1 .. 20)
{
	my $t = time();
	my $res = QuerygateTest::fresh_request($qg, 'GET', '/q/ev_ping', key => $k1);
	$slowest = time() - $t if time() - $t > $slowest;
	push @statuses, $res->{status};
	$last_rid = $res->{headers}{'x-request-id'};
}
is(join(',', @statuses), join(',', (200) x 20), '20 calls, each on a new connection, answered while 5 streams are open');
cmp_ok($slowest, '<', timeouts(2), sprintf('promptly (slowest %.3f s)', $slowest));
is(scalar(grep { wait_run($_, $last_rid) } @open), 5, 'and each stream got the last call\'s event');
close_stream($_) for @open;

# ---------------------------------------------------------------- grants are checked at each delivery

$qg->sql(q{SELECT querygate.grant_events('ev_third', 'policy')});
my $k_third_stream = new_key('ev_third');
my $st = must_open('a stream of ev_third', key => $k_third_stream);
my $sq = must_open('a stream of ev_pol', key => new_key('ev_pol'));
$qg->sql(q{SELECT querygate.revoke_query('ev_pol', 'ev_item')});
my (undef, $rid_a) = call('ev_item', $k_third, id => 2, tag => 'x');
my (undef, $rid_b) = call('ev_ping', $k1);
ok(wait_run($st, $rid_a), 'ev_item still makes events (ev_third sees them)');
ok(wait_run($sq, $rid_b), 'ev_pol\'s stream gets a later event of ev_ping');
ok(!run_of($sq, $rid_a), 'but not ev_item\'s, whose grant was revoked after the stream opened');
close_stream($_) for $st, $sq;
$qg->sql(q{SELECT querygate.grant_query('ev_pol', 'ev_item')});

# ---------------------------------------------------------------- whose calls a watcher sees

# By default (grant_events scope 'own') a watcher sees its own calls only, not another key's of
# the same policy and tenant; with scope 'policy', every call of its policy in its tenant, never
# one of another tenant. Absence by order: the later call's event came, the earlier's did not.
$qg->sql(q{SELECT querygate.create_policy('ev_scope', 'ev_role');
           SELECT querygate.grant_query('ev_scope', 'ev_ping');
           SELECT querygate.grant_events('ev_scope');});
is($qg->sql(q{SELECT events || ' ' || events_scope FROM querygate.policies WHERE name = 'ev_scope'}),
	'true own', 'grant_events: scope own by default, shown in policies');
my %tk = map { $_->[0] => $qg->sql("SELECT querygate.create_key('ev_scope_$_->[0]', 'ev_scope', tenant => '$_->[1]')") }
  ([ a1 => 'a' ], [ a2 => 'a' ], [ a3 => 'a' ], [ b1 => 'b' ]);
my $so = must_open('a stream of a key of its own', key => $tk{a1});
my (undef, $rid_a2) = call('ev_ping', $tk{a2});
my (undef, $rid_a1) = call('ev_ping', $tk{a1});
ok(wait_run($so, $rid_a1), "own: the watcher's own call reaches it");
ok(!run_of($so, $rid_a2), "own: another key's call of the same policy and tenant does not");
close_stream($so);
$qg->sql(q{SELECT querygate.grant_events('ev_scope', 'policy')});
is($qg->sql(q{SELECT events_scope FROM querygate.policies WHERE name = 'ev_scope'}), 'policy',
	'grant_events(..., \'policy\') is shown');
my $sp = must_open('a stream of the policy\'s calls', key => $tk{a3});
my (undef, $rid_b1) = call('ev_ping', $tk{b1});
my (undef, $rid_a2b) = call('ev_ping', $tk{a2});
ok(wait_run($sp, $rid_a2b), 'policy: another key\'s call in the watcher\'s tenant reaches it');
ok(!run_of($sp, $rid_b1), 'policy: a call in another tenant does not');
close_stream($sp);
eval { $qg->sql(q{SELECT querygate.grant_events('ev_scope', 'everyone')}) };
like($@, qr/the events scope must be 'own' or 'policy'/, 'grant_events refuses another scope');

# ---------------------------------------------------------------- 7. revoking ends streams

sub wait_end
{
	my ($s, $code, $name) = @_;
	ok(stream_wait($s, sub { $s->{ended} || events_of($s, 'end') && $s->{closed} }), "$name: the body ends")
	  or diag("body: $s->{body}");
	my @ends = events_of($s, 'end');
	is_deeply([ map { $_->{json} } @ends ], [ { code => $code } ], "$name: event: end, {\"code\":\"$code\"}")
	  or diag("body: $s->{body}");
	my @all = events_of($s, qw(run gap end));
	is(@all ? $all[-1]{type} : '(none)', 'end', "$name: the end event is the last");
	ok($s->{ended}, "$name: with the last chunk") or diag("closed: $s->{closed}; wire tail: " . substr($s->{wire}, -200));
}

my $kv = new_key('ev_pol');
my $sv = must_open('a stream to revoke events of', key => $kv);
$qg->sql(q{SELECT querygate.revoke_events('ev_pol')});
my ($trig) = call('ev_ping', $k1);
is($trig->{status}, 200, 'calls do not need events');
wait_end($sv, 'events_not_granted', 'revoke_events');
close_stream($sv);
$qg->expect_error(refused(open_stream(key => $kv)), 403, 'events_not_granted', 'after revoke_events: 403');
$qg->sql(q{SELECT querygate.grant_events('ev_pol', 'policy')});
my ($kw, $kw_name) = new_key('ev_pol', named => 1);
my $sw = must_open('a stream whose key is revoked', key => $kw);
$qg->sql('SELECT querygate.revoke_key(' . sql_quote($kw_name) . ')');
call('ev_ping', $k1);
wait_end($sw, 'unauthorized', 'revoke_key');
close_stream($sw);
$qg->expect_error(refused(open_stream(key => $kw)), 401, 'unauthorized', 'a revoked key: 401');

# ---------------------------------------------------------------- 8. the npm package's EventSource

my $events_url = $qg->base_url . '/events';

sub client_start
{
	my ($url, $key, $count, $timeout, @flags) = @_;
	my $c = { in => '', out => '', err => '' };
	$c->{h} = IPC::Run::start([ $node_bin, "$clients/events_client.mjs", $url, $key // '', $count, $timeout, @flags ],
		'<', \$c->{in}, '>', \$c->{out}, '2>', \$c->{err});
	return $c;
}

sub client_lines
{
	my ($c) = @_;
	return map { json_decode($_) // { type => 'unparsed', text => $_ } } grep { length } split /\n/,
	  ($c->{out} =~ /^(.*\n)/s ? $1 : '');
}

sub client_wait
{
	my ($c, $cond, $timeout) = @_;
	return QuerygateTest::poll_until(sub { $c->{h}->pump_nb; $cond->([ client_lines($c) ]) }, $timeout // $WAIT);
}

sub client_finish
{
	my ($c) = @_;
	my $done = client_wait($c, sub { grep { $_->{type} eq 'done' } @{ $_[0] } }, timeouts(30));
	$c->{h}->kill_kill unless $done;
	$c->{h}->finish;
	diag("events_client.mjs: $c->{err}") if length $c->{err};
	return [ client_lines($c) ];
}

sub client_runs { my ($lines) = @_; return grep { $_->{type} eq 'run' } @$lines; }
sub opened { my ($n) = @_; return sub { grep { $_->{type} eq 'open' && $_->{n} == $n } @{ $_[0] } }; }

# X-API-Key through the fetch option
my $n1 = client_start($events_url, new_key('ev_pol'), 2, timeouts(20));
ok(client_wait($n1, opened(1)), 'EventSource with X-API-Key (fetch option): open')
  or diag("$n1->{out} $n1->{err}");
my (undef, $rid_n1) = call('ev_ping', $k1);
my (undef, $rid_n2) = call('ev_item', $k1, id => 2, tag => 'x');
my $lines = client_finish($n1);
my @nr = client_runs($lines);
is_deeply([ map { $_->{data}{request_id} } @nr ], [ $rid_n1, $rid_n2 ], 'it receives both run events');
is_deeply([ map { $_->{data}{query} } @nr ], [qw(ev_ping ev_item)], 'with their queries');
is_deeply([ map { $_->{last_event_id} } @nr ], [ map { "$_->{data}{id}" } @nr ], 'its lastEventId is each event\'s id');
my ($done1) = grep { $_->{type} eq 'done' } @$lines;
is($done1 ? $done1->{reason} : '(none)', 'count', 'and it ends after them');

# ?access_token= (the browser way: no header)
my $n2 = client_start($events_url . query_string(access_token => new_key('ev_pol')), '', 1, timeouts(20));
ok(client_wait($n2, opened(1)), 'EventSource with ?access_token=: open') or diag("$n2->{out} $n2->{err}");
my (undef, $rid_n3) = call('ev_ping', $k1);
$lines = client_finish($n2);
is_deeply([ map { $_->{data}{request_id} } client_runs($lines) ], [$rid_n3], '?access_token=: it receives the run event');

# Reconnecting: the server ends the body (revoke_events, delivered at the next keep-alive: no call
# is made), EventSource reconnects by itself with Last-Event-ID, held by the client while two calls
# are made (one before events are granted again, one after), and gets exactly those two.
my $n3 = client_start($events_url, new_key('ev_pol'), 100, timeouts(40), '--hold-reconnect');
ok(client_wait($n3, opened(1)), 'EventSource for reconnecting: open') or diag("$n3->{out} $n3->{err}");
my (undef, $rid_c1) = call('ev_ping', $k1);
ok(client_wait($n3, sub { grep { $_->{type} eq 'run' && $_->{data}{request_id} eq $rid_c1 } @{ $_[0] } }),
	'it receives a run event');
$qg->sql(q{SELECT querygate.revoke_events('ev_pol')});
ok(client_wait($n3, sub { grep { $_->{type} eq 'end' } @{ $_[0] } }),
	'revoke_events, no call after it: EventSource gets the end event (at a keep-alive)');
ok(client_wait($n3, sub { grep { $_->{type} eq 'request' && $_->{n} == 2 } @{ $_[0] } }, timeouts(15)),
	'the body ended: EventSource reconnects by itself (after retry: 3000)') or diag($n3->{out});
$lines = [ client_lines($n3) ];
my ($req2_at) = grep { $lines->[$_]{type} eq 'request' && $lines->[$_]{n} == 2 } 0 .. $#$lines;
my @before = grep { $_->{type} =~ /^(run|gap|end)$/ } @$lines[ 0 .. ($req2_at // 0) ];
is_deeply([ map { $_->{type} } @before ], [qw(run end)], 'before reconnecting it had the run event and the end');
my $c1_id = @before ? "$before[0]{data}{id}" : '(none)';
is(defined $req2_at ? $lines->[$req2_at]{last_event_id} : undef, $c1_id,
	'it sends the run event\'s id as Last-Event-ID');
my (undef, $rid_c2) = call('ev_ping', $k1);
$qg->sql(q{SELECT querygate.grant_events('ev_pol', 'policy')});
my (undef, $rid_c3) = call('ev_ping', $k1);
$n3->{in} .= "go\n";
ok(client_wait($n3, sub { grep { $_->{type} eq 'run' && $_->{data}{request_id} eq $rid_c3 } @{ $_[0] } }),
	'it reconnects and receives the events of the calls made while it was away') or diag($n3->{out});
$n3->{in} .= "quit\n";
$lines = client_finish($n3);
my @after = grep { $_->{type} =~ /^(run|gap|end)$/ } @$lines[ ($req2_at // 0) + 1 .. $#$lines ];
is_deeply([ map { "$_->{type} " . ($_->{data}{request_id} // '') } @after ], [ "run $rid_c2", "run $rid_c3" ],
	'after reconnecting: exactly the two events after its Last-Event-ID, in order');

# ---------------------------------------------------------------- 5b. the per-worker cap, reloaded

$qg->set_and_reload('querygate.max_event_streams', '1');
my ($p1, $p2);
ok(QuerygateTest::poll_until(sub {
	$p1 //= open_stream(key => new_key('ev_pol'));
	if (($p1->{status} // '') ne '200') { close_stream($p1); $p1 = undef; return 0; }
	$p2 = open_stream(key => new_key('ev_pol'));
	return 1 if ($p2->{status} // '') eq '503';
	close_stream($p2);
	return 0;
}, timeouts(15)), 'max_event_streams = 1 (reloaded), one stream open: the next is refused');
$qg->expect_error(refused($p2), 503, 'streams_full', 'past max_event_streams') if $p2;
is($p2 ? $p2->{headers}{'retry-after'} : undef, '1', 'with Retry-After: 1');
close_stream($p1) if $p1;
my ($opened, $p3) = open_when_free(timeouts(10));
ok($opened, 'the one stream closed: a new one opens');
$qg->expect_error(refused(open_stream(key => new_key('ev_pol'))), 503, 'streams_full', 'and the one after it is refused');
$qg->sql('ALTER SYSTEM RESET querygate.max_event_streams; SELECT pg_reload_conf()');
(my $reopened, my $p4) = open_when_free(timeouts(15));
ok($reopened, 'reset: a second stream opens');

# ---------------------------------------------------------------- 9. stopping with streams open

my $p5 = must_open('a third stream', key => new_key('ev_pol'));
my $t_stop = time();
my $stopped;
{
	local $ENV{PGCTLTIMEOUT} = timeouts(30);
	$stopped = $qg->node->stop('fast', fail_ok => 1);
}
my $took = time() - $t_stop;
ok($stopped, 'pg_ctl stop -m fast with 3 streams open succeeds');
cmp_ok($took, '<', timeouts(5), sprintf('in a few seconds (%.2f s)', $took));
for my $s ($p3, $p4, $p5)
{
	stream_wait($s, sub { $_[0]{closed} }, timeouts(5));
}
is(scalar(grep { $_->{closed} } $p3, $p4, $p5), 3, 'every stream\'s connection is closed');
is(scalar(grep { $_->{ended} } $p3, $p4, $p5), 3, 'every stream\'s body ended with its last chunk');
$qg->node->stop('immediate', fail_ok => 1) unless $stopped;

# ---------------------------------------------------------------- event_buffer = 0: off

my $off = QuerygateTest->start(name => 'events_off', workers => 1, conf => "querygate.event_buffer = 0\n");
my $k_off = $off->access(policy => 'off_pol', allow_superuser => 1, queries => [],
	setup => q{SELECT querygate.grant_events('off_pol', 'policy');});
$off->expect_error(refused(open_stream(qg => $off, key => $k_off)), 404, 'not_found',
	'querygate.event_buffer = 0: GET /events is off');
$off->node->stop('fast');

done_testing();
