# The helpers of the querygate HTTP end-to-end tests (test/t/*.pl).
#
# A test starts its own cluster with the library preloaded and a free HTTP port, creates the
# extension, and waits (polling, bounded) until GET /health answers 200. Its policies run as
# ordinary roles holding only the privileges their queries need:
#
#   my $qg = QuerygateTest->start(name => 'main', workers => 2);
#   my $role = $qg->role('reader_role', select => ['accounts']);
#   my $secret = $qg->access(policy => 'reader', run_as => $role, queries => ['account']);
#   my $res = $qg->get('/q/account?aid=7', key => $secret);
#   $qg->expect_rows($res, [ { aid => 7 } ], 'one row');
#
# Responses are HTTP::Tiny hashes plus {json} (the decoded body, or undef when it is not JSON).
#
# Also here, for the governance tests:
#   - values computed independently of querygate: the HMAC-SHA-256 of the hash mask (with the
#     secret read from querygate.mask_secret as superuser), the text of the mask action, and the
#     text PostgreSQL itself gives a column (column_texts), so expected masked rows are built in Perl;
#   - SQL errors with their SQLSTATE (sql_error);
#   - each call of a saved query sent through both paths, /q/{name} and POST /sql with its text, by
#     a twin of the policy that is granted ad-hoc SQL (adhoc_twin, both, get_both, post_both);
#   - requests on a fresh connection and polling for a reloaded setting across every worker
#     (poll_fresh), a request left running on its own connection (start_request/finish_request);
#   - JWTs: HS256 signed with Digest::SHA, RS256 and ES256 signed with the openssl command, and the
#     JWKS of their public keys.
package QuerygateTest;

use strict;
use warnings;

use Exporter 'import';
use Fcntl ();
use IPC::Run ();
use File::Basename ();
use File::Spec;
use Digest::SHA qw(hmac_sha256 hmac_sha256_hex);
use HTTP::Tiny;
use IO::Select;
use IO::Socket::INET;
use JSON::PP;
use MIME::Base64 qw(encode_base64 decode_base64);
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

our @EXPORT = qw(pct query_string json_encode json_decode poll_until sql_quote read_until_close
  parse_answer
  read_response mask_secret hash_key hmac_of masked_text column_texts sql_error fresh_request poll_fresh
  start_request finish_request body_without_request_id on_path b64url b64url_decode jwt_hs256 jwt_unsigned
  openssl_key rsa_jwk ec_jwk public_pem jwt_openssl timeouts);

# How many times slower every process runs than on a plain build: test/run sets it for a
# sanitized server (3) and under Valgrind (20); every time limit of these helpers is multiplied
# by it (timeouts(), $POLL_TIMEOUT).
our $TIME_FACTOR = $ENV{QUERYGATE_TIME_FACTOR} || 1;

# Seconds stretched by $TIME_FACTOR: for a test's own time limits (never for a time it measures).
sub timeouts { return $_[0] * $TIME_FACTOR; }

# Seconds any readiness poll may take before the test gives up.
our $POLL_TIMEOUT = timeouts(30);

my $JSON = JSON::PP->new->utf8->canonical->allow_nonref;

sub json_encode { return $JSON->encode($_[0]); }

sub json_decode
{
	my ($bytes) = @_;
	return undef unless defined $bytes && length $bytes;
	my $v = eval { $JSON->decode($bytes) };
	return $v;
}

# Percent-encodes every byte outside the unreserved set (space is %20, '+' is %2B), so that the
# server's decoding of '+' does not matter. Takes bytes (or characters, which are UTF-8 encoded).
sub pct
{
	my ($s) = @_;
	utf8::encode($s) if utf8::is_utf8($s);
	$s =~ s/([^A-Za-z0-9\-._~])/sprintf('%%%02X', ord($1))/ge;
	return $s;
}

# query_string(a => 1, b => 'x y') or query_string([a => 1, a => 2]) -> "?a=1&b=x%20y"
sub query_string
{
	my @pairs = (@_ == 1 && ref $_[0] eq 'ARRAY') ? @{ $_[0] } : @_;
	my @parts;
	while (@pairs)
	{
		my ($k, $v) = splice(@pairs, 0, 2);
		push @parts, pct($k) . '=' . pct($v);
	}
	return @parts ? '?' . join('&', @parts) : '';
}

sub sql_quote
{
	my ($s) = @_;
	$s =~ s/'/''/g;
	return "'$s'";
}

# Calls $code every 50 ms until it returns true or $timeout seconds pass. Returns the last value.
sub poll_until
{
	my ($code, $timeout) = @_;
	$timeout //= $POLL_TIMEOUT;
	my $deadline = time() + $timeout;
	while (1)
	{
		my $v = $code->();
		return $v if $v;
		return $v if time() > $deadline;
		usleep(50_000);
	}
}

# start(name => 'main', workers => 2, preload => 1, extension => 1, conf => "extra lines\n",
#       wait_health => 1, jwt_secret => 'one' or ['one', 'two'], metrics_token => 'token')
# jwt_secret and metrics_token are written to files in the data directory (write_secret_file)
# that querygate.jwt_secret_file and querygate.metrics_token_file name.
sub start
{
	my ($class, %o) = @_;
	my $name = $o{name} // 'main';
	my $preload = $o{preload} // 1;
	my $node = PostgreSQL::Test::Cluster->new($name);
	# allows_streaming => 1: a primary that standbys can stream from (see standby below);
	# initdb => [options]: initdb's own (['--encoding=UTF8', '--locale=C'] where a test counts
	# characters of several bytes, whatever the machine's locale).
	$node->init(allows_streaming => $o{allows_streaming} // 0, extra => $o{initdb} // []);
	my $http_port = PostgreSQL::Test::Cluster::get_free_port();
	my $conf = "timezone = 'UTC'\nlog_min_messages = info\n";
	for my $secret ([ 'jwt_secret', 'jwt.key' ], [ 'metrics_token', 'metrics.token' ])
	{
		my ($option, $file) = @$secret;
		next unless defined $o{$option};
		write_secret_file($node, $file, $o{$option});
		$conf .= "querygate.${option}_file = '$file'\n";
	}
	if ($preload)
	{
		$conf .= "shared_preload_libraries = 'querygate'\n"
		  . "querygate.port = $http_port\n"
		  . "querygate.database = 'postgres'\n"
		  . 'querygate.workers = ' . ($o{workers} // 2) . "\n";
		# Shedding judges how long a request waited for its worker (src/http/overload_gate): a
		# server that runs $TIME_FACTOR times slower (Valgrind, the sanitizers) waits that much
		# longer at the same load, so its target (20 ms) is stretched alike. Not the interval:
		# a worker that read nothing for half of it starts its count again, which is what keeps
		# a queue behind calls of 50 ms or more from being shed (053's); a longer interval would
		# shed them. With the target alone raised, the gate sheds less than the defaults would on
		# the same waits, never more. A test of shedding sets its own (conf below comes later
		# and wins).
		$conf .= 'querygate.overload_target = ' . (20 * $TIME_FACTOR) . "ms\n"
		  if $TIME_FACTOR > 1;
		# Likewise the time a read may run in a worker before it moves to a helper (10 ms): a
		# call the instrumented server runs slower is not a slower query.
		$conf .= 'querygate.slow_call_threshold = ' . (10 * $TIME_FACTOR) . "ms\n"
		  if $TIME_FACTOR > 1;
	}
	$conf .= $o{conf} if defined $o{conf};
	$node->append_conf('postgresql.conf', $conf);
	$node->start;

	my $self = $class->_wrap($node, $http_port);

	$node->safe_psql('postgres', 'CREATE EXTENSION querygate') if $o{extension} // 1;
	# wait_health => 0: the caller waits its own way (over TLS, say)
	if ($preload && ($o{wait_health} // 1))
	{
		my $ok = $self->wait_health;
		BAIL_OUT("querygate did not answer GET /health with 200 within ${POLL_TIMEOUT}s")
		  unless $ok;
	}
	return $self;
}

# Writes a secret file (querygate.jwt_secret_file, querygate.metrics_token_file) into the node's
# data directory, mode 0600, one secret a line: $secrets is one or an array of them. Called on a
# QuerygateTest or a node; a reload makes the workers read it again.
sub write_secret_file
{
	my ($self, $file, $secrets, $mode) = @_;
	my $node = ref $self eq 'QuerygateTest' ? $self->node : $self;
	my $path = $node->data_dir . "/$file";
	unlink $path;
	sysopen(my $fh, $path, Fcntl::O_WRONLY() | Fcntl::O_CREAT() | Fcntl::O_EXCL(), 0600)
	  or die "$path: $!";
	print $fh "$_\n" for ref $secrets ? @$secrets : ($secrets);
	close $fh or die "$path: $!";
	chmod $mode, $path if defined $mode;
	return $path;
}

# A started node and its HTTP port, as a QuerygateTest.
sub _wrap
{
	my ($class, $node, $http_port) = @_;
	return bless {
		node => $node,
		port => $http_port,
		http => HTTP::Tiny->new(keep_alive => 1, timeout => timeouts(60)),
		keyn => 0,
	}, $class;
}

# A hot standby of this server (started with allows_streaming => 1), streaming from it: made from
# a fresh base backup, with the primary's settings but an HTTP port of its own; started, and its
# workers answering GET /health. Returns it as a QuerygateTest.
sub standby
{
	my ($self, %o) = @_;
	my $name = $o{name} // 'standby';
	my $primary = $self->{node};
	$primary->backup("${name}_backup");
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init_from_backup($primary, "${name}_backup", has_streaming => 1);
	my $http_port = PostgreSQL::Test::Cluster::get_free_port();
	$node->append_conf('postgresql.conf', "querygate.port = $http_port\n" . ($o{conf} // ''));
	$node->start;
	my $standby = (ref $self)->_wrap($node, $http_port);
	BAIL_OUT("the standby's querygate did not answer GET /health within ${POLL_TIMEOUT}s")
	  unless $standby->wait_health;
	return $standby;
}

sub node { return $_[0]{node}; }
sub port { return $_[0]{port}; }
sub base_url { return 'http://127.0.0.1:' . $_[0]{port}; }

# A new HTTP::Tiny client (its own connection).
sub new_client
{
	my ($self, %o) = @_;
	return HTTP::Tiny->new(keep_alive => 1, timeout => timeouts(60), %o);
}

sub wait_health
{
	my ($self) = @_;
	my $probe = HTTP::Tiny->new(keep_alive => 0, timeout => timeouts(5));
	return poll_until(
		sub {
			my $r = $probe->get($self->base_url . '/health');
			return $r->{status} == 200;
		});
}

# Runs SQL in database postgres; dies on error. Each call commits before it returns.
sub sql
{
	my ($self, $sql) = @_;
	utf8::encode($sql) if utf8::is_utf8($sql);
	return $self->{node}->safe_psql('postgres', $sql);
}

# Returns once at least $seconds are left of the UTC day on the server's clock, sleeping past
# midnight when fewer are. For a part of a test that counts on one day from its start to its end
# (a day's history partition, a quota counted per day): CI may run it at any hour, and a part that
# crosses midnight would see two days. Returns the seconds slept.
sub day_with_room
{
	my ($self, $seconds) = @_;
	my $left = $self->sql(q{SELECT extract(epoch FROM date_trunc('day', now() AT TIME ZONE 'UTC')
	                                             + interval '1 day' - now() AT TIME ZONE 'UTC')});
	return 0 if $left >= $seconds;
	my $sleep = $left + 2;
	Test::More::note("waiting ${sleep}s for midnight UTC: the next part needs $seconds s of one day");
	usleep(int($sleep * 1_000_000));
	return $sleep;
}

# ALTER SYSTEM SET name = value (value is quoted) and reload. The change reaches the workers
# asynchronously: callers poll for the new behaviour.
sub set_and_reload
{
	my ($self, $name, $value) = @_;
	$self->sql("ALTER SYSTEM SET $name = " . sql_quote($value));
	$self->sql('SELECT pg_reload_conf()');
}

# A NOLOGIN role for a policy's run_as that holds only what is named: SELECT on each table of
# select => [...], and each grant => [...] entry ('INSERT, UPDATE ON audit', 'USAGE ON SEQUENCE s',
# 'EXECUTE ON FUNCTION f(int)'), granted TO the role. Returns the role's name.
sub role
{
	my ($self, $name, %o) = @_;
	my $sql = "CREATE ROLE $name NOLOGIN;\n";
	$sql .= "GRANT SELECT ON $_ TO $name;\n" for @{ $o{select} // [] };
	$sql .= "GRANT $_ TO $name;\n" for @{ $o{grant} // [] };
	$self->sql($sql);
	return $name;
}

# Grants a policy queries and returns a new key's secret; the first call for a policy creates it.
#   $qg->access(policy => 'p', run_as => 'role', queries => [...], setup => 'more SQL',
#               key => 'name', key_args => "expires_at => now() + interval '1 day'")
# A policy runs as run_as, which should be a role made by role() holding only the privileges its
# queries need. A test about the superuser itself says so instead: allow_superuser => 1 (and no
# run_as) runs the policy as the test's superuser. setup runs with the grants; key => undef makes
# no key (returns undef); without key, the key is named after the policy and a number; key_args
# are more named arguments of create_key (expires_at, allowed_ips, tenant); jwt_issuers => [...]
# names the issuers whose bearer tokens may name the policy (set_policy).
sub access
{
	my ($self, %o) = @_;
	my $policy = $o{policy} // 'reader';
	my $p = sql_quote($policy);
	my $sql = '';
	unless ($self->{policies}{$policy}++)
	{
		die "access: policy $policy needs run_as, or allow_superuser => 1 to run as the superuser"
		  unless defined $o{run_as} xor $o{allow_superuser};
		my $run_as = defined $o{run_as} ? ', ' . sql_quote($o{run_as}) : ', allow_superuser => true';
		$sql .= "SELECT querygate.create_policy($p$run_as);\n";
	}
	elsif (defined $o{run_as} || $o{allow_superuser})
	{
		die "access: policy $policy exists already; run_as and allow_superuser only apply when it is created";
	}
	my $list = join(', ', map { sql_quote($_) } @{ $o{queries} // [] });
	$sql .= "SELECT count(querygate.grant_query($p, q)) FROM unnest(ARRAY[$list]::text[]) AS q;\n" if length $list;
	$sql .= "SELECT querygate.set_policy($p, jwt_issuers => ARRAY["
	  . join(', ', map { sql_quote($_) } @{ $o{jwt_issuers} }) . "]::text[]);\n"
	  if $o{jwt_issuers};
	$sql .= $o{setup} // '';
	$self->sql($sql) if length $sql;
	return undef if exists $o{key} && !defined $o{key};
	my $key = $o{key} // $policy . '_key' . ++$self->{keyn};
	my $args = defined $o{key_args} ? ", $o{key_args}" : '';
	my $secret = $self->sql('SELECT querygate.create_key(' . sql_quote($key) . ", $p$args)");
	$self->{policy_of_key}{$secret} = $policy;    # for both(): whose twin answers through /sql
	return $secret;
}

# request($method, $path, key => secret, bearer => secret, headers => {...}, json => perl value,
#         content => bytes, client => HTTP::Tiny)
sub request
{
	my ($self, $method, $path, %o) = @_;
	my %h = %{ $o{headers} // {} };
	$h{'X-API-Key'} = $o{key} if defined $o{key};
	$h{'Authorization'} = "Bearer $o{bearer}" if defined $o{bearer};
	my $content = $o{content};
	if (exists $o{json})
	{
		$content = json_encode($o{json});
	}
	$h{'Content-Type'} //= 'application/json' if defined $content;
	my $client = $o{client} // $self->{http};
	my $res = $client->request($method, $self->base_url . $path,
		{ headers => \%h, (defined $content ? (content => $content) : ()) });
	$res->{json} = json_decode($res->{content});
	return $res;
}

sub get { my ($self, $path, %o) = @_; return $self->request('GET', $path, %o); }

# post($path, $perl_body, %o): the body is JSON-encoded unless content => is given.
sub post
{
	my ($self, $path, $body, %o) = @_;
	return $self->request('POST', $path, (defined $body ? (json => $body) : ()), %o);
}

sub describe
{
	my ($res) = @_;
	my $c = $res->{content} // '';
	$c = substr($c, 0, 2000) . '...' if length $c > 2000;
	return "status $res->{status}, body: $c";
}

# Asserts status 200 and that the body decodes to $rows (a Perl structure). 2 assertions. An
# answer from both() says its path in the names.
sub expect_rows
{
	my ($self, $res, $rows, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	$name = on_path($res, $name);
	is($res->{status}, 200, "$name: status 200") or diag(describe($res));
	is_deeply($res->{json}, $rows, "$name: rows") or diag(describe($res));
}

# Asserts an error response: "<status> <code>", the body shape
# {"error": non-empty, "code", "request_id" = X-Request-Id header} (+ "errors" for parameter
# errors), with param => 'name', that "errors" names that parameter, and with names => qr/.../,
# that the message names something (a table, a column). 2, 3 or 4 assertions. For an answer of
# POST /sql from both(), sql => [status, code, %options] is what is asserted instead, where the
# two paths answer differently by design (a relation outside the allow-list is name_not_allowed).
sub expect_error
{
	my ($self, $res, $status, $code, $name, %o) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	if (($res->{via} // '') eq '/sql')
	{
		$name = on_path($res, $name);
		($status, $code, %o) = @{ $o{sql} } if $o{sql};
	}
	my $j = $res->{json};
	my $got_code = (ref $j eq 'HASH' && defined $j->{code}) ? $j->{code} : '(none)';
	is("$res->{status} $got_code", "$status $code", "$name: $status $code") or diag(describe($res));
	my @problems;
	if (ref $j ne 'HASH')
	{
		push @problems, 'body is not a JSON object';
	}
	else
	{
		my %allowed = map { $_ => 1 } qw(error code request_id errors);
		push @problems, "unexpected key $_" for grep { !$allowed{$_} } sort keys %$j;
		push @problems, 'error is not a non-empty string'
		  unless defined $j->{error} && !ref $j->{error} && length $j->{error};
		my $rid = $res->{headers}{'x-request-id'};
		push @problems, 'no X-Request-Id header' unless defined $rid;
		push @problems, 'request_id differs from X-Request-Id'
		  unless defined $rid && defined $j->{request_id} && $j->{request_id} eq $rid;
		push @problems, 'errors is not an object'
		  if exists $j->{errors} && ref $j->{errors} ne 'HASH';
		my $ct = $res->{headers}{'content-type'} // '';
		push @problems, "Content-Type is '$ct'" unless $ct =~ m{^application/json\b}i;
	}
	is(join('; ', @problems), '', "$name: error body shape") or diag(describe($res));
	if (defined $o{param})
	{
		ok(ref $j eq 'HASH' && ref $j->{errors} eq 'HASH' && exists $j->{errors}{ $o{param} },
			"$name: errors names parameter $o{param}")
		  or diag(describe($res));
	}
	if (defined $o{names})
	{
		my $msg = ref $j eq 'HASH' ? ($j->{error} // '') : '';
		like($msg, $o{names}, "$name: the message names it") or diag(describe($res));
	}
}

# PIDs of the HTTP workers, sorted.
sub worker_pids
{
	my ($self) = @_;
	my $out = $self->sql(
		"SELECT pid FROM pg_stat_activity WHERE backend_type = 'querygate http worker' ORDER BY pid");
	return [ split /\n/, $out ];
}

# Sends raw bytes on a new TCP connection, waits up to $timeout seconds for the server to answer
# or close, and returns what was read ('' if nothing). close_after => 1 closes right after sending.
sub raw_exchange
{
	my ($self, $bytes, %o) = @_;
	my $timeout = $o{timeout} // timeouts(5);
	my $sock = $self->connect_raw;
	syswrite($sock, $bytes) if length $bytes;
	if ($o{close_after})
	{
		close $sock;
		return '';
	}
	shutdown($sock, 1) if $o{shutdown_write};
	return read_until_close($sock, $timeout);
}

# A raw keep-alive connection to the server, for tests that control when each request is sent.
sub connect_raw
{
	my ($self) = @_;
	my $sock = IO::Socket::INET->new(
		PeerAddr => '127.0.0.1',
		PeerPort => $self->{port},
		Proto => 'tcp',
		Timeout => 5) or die "connect: $!";
	$sock->autoflush(1);
	return $sock;
}

# Reads one whole response (headers and Content-Length body) from a raw connection, leaving it
# open and reading no byte of the next response (pipelined requests). Returns (status code, body),
# or ('none', '') if none came within $timeout seconds.
sub read_response
{
	my ($status, $body) = read_response_with_head(@_);
	return ($status, $body);
}

# As read_response, and the response's head (status line and headers) third.
sub read_response_with_head
{
	my ($sock, $timeout) = @_;
	my ($head, $body, $sel, $deadline) = ('', '', IO::Select->new($sock), time() + $timeout);
	my $len;
	while (time() < $deadline)
	{
		if (defined $len)
		{
			return (($head =~ m{^HTTP/1\.\d (\d+)})[0], $body, $head) if length($body) >= $len;
		}
		elsif ($head =~ /\r\n\r\n\z/)
		{
			($len) = $head =~ /^content-length:\s*(\d+)/mi;
			return ('none', '') unless defined $len;
			next;
		}
		last unless $sel->can_read($deadline - time());
		# Headers a byte at a time, so nothing past them is consumed; then exactly the body.
		my $n = defined $len
		  ? sysread($sock, $body, $len - length($body), length($body))
		  : sysread($sock, $head, 1, length($head));
		last unless $n;
	}
	return ('none', '');
}

# Reads from $sock until the peer closes it or $timeout seconds pass, and closes it; returns
# (the bytes read, whether the peer closed it).
sub wait_close
{
	my ($sock, $timeout) = @_;
	my $sel = IO::Select->new($sock);
	my ($got, $closed) = ('', 0);
	my $deadline = time() + $timeout;
	while (time() < $deadline)
	{
		last unless $sel->can_read($deadline - time());
		my $n = sysread($sock, my $buf, 65536);
		if (!$n) { $closed = 1; last; }
		$got .= $buf;
	}
	close $sock;
	return ($got, $closed);
}

# Reads from $sock until the peer closes or $timeout seconds pass, closes it, returns the bytes.
sub read_until_close
{
	my ($sock, $timeout) = @_;
	my $sel = IO::Select->new($sock);
	my $got = '';
	my $deadline = time() + $timeout;
	while (time() < $deadline)
	{
		last unless $sel->can_read($deadline - time());
		my $n = sysread($sock, my $buf, 65536);
		last unless $n;
		$got .= $buf;
	}
	close $sock;
	return $got;
}

# ---------------------------------------------------------------- independent values

# The secret of the hash mask, as bytes: the oldest row of querygate.mask_secret (the one in use).
sub mask_secret
{
	my ($qg) = @_;
	my $hex = $qg->sql('SELECT encode(secret, \'hex\') FROM querygate.mask_secret ORDER BY created_at LIMIT 1');
	die "no mask secret" unless $hex =~ /^[0-9a-f]{64,}$/;
	return pack('H*', $hex);
}

# The hash action's key for a policy's answers, as the extension derives it (hash_key_for in
# src/call/catalog_cache.cpp): HMAC-SHA-256 under the mask secret of "querygate hash scope\n" and
# "policy:<name>", or "shared:<scope>" for a policy that names a shared scope.
sub hash_key
{
	my ($qg, %o) = @_;
	my $label = "querygate hash scope\n" . (defined $o{scope} ? "shared:$o{scope}" : "policy:$o{policy}");
	return hmac_sha256($label, mask_secret($qg));
}

# HMAC-SHA-256 of a value's text (characters are UTF-8 encoded), as 64 lower-case hex digits;
# undef stays undef (a NULL is never hashed).
sub hmac_of
{
	my ($secret, $text) = @_;
	return undef unless defined $text;
	utf8::encode($text) if utf8::is_utf8($text);
	return hmac_sha256_hex($text, $secret);
}

# The mask action on a text: its first character and ***.
sub masked_text
{
	my ($text) = @_;
	return undef unless defined $text;
	return (length $text ? substr($text, 0, 1) : '') . '***';
}

# What a caller's parser reads of an answer's body ($kind: json, ndjson, csv or tsv), as a Perl
# structure: test/clients/parse_answer.py, Python's own json and csv modules and COPY's text
# format. A string saying why when it does not parse.
sub parse_answer
{
	my ($kind, $body) = @_;
	my ($out, $err) = ('', '');
	my $parser = File::Spec->catfile(File::Basename::dirname(__FILE__), '..', 'clients', 'parse_answer.py');
	IPC::Run::run([ 'python3', $parser, $kind ], '<', \$body, '>', \$out, '2>', \$err)
	  or return "(does not parse: $err)";
	return JSON::PP::decode_json($out);
}

# The text PostgreSQL gives each of @cols in each row of $select (run as superuser, in order):
# { col => [Perl character strings, undef for NULL] }, read with one query.
sub column_texts
{
	my ($qg, $select, @cols) = @_;
	my $list = join(', ',
		map { sql_quote($_) . ", coalesce(json_agg(s.\"$_\"::text), '[]')" } @cols);
	return json_decode($qg->sql("SELECT json_build_object($list) FROM ($select) AS s"));
}

# Runs SQL that should fail: returns "SQLSTATE message" of the first error, or 'no error'.
sub sql_error
{
	my ($qg, $sql) = @_;
	my ($out, $err) = ('', '');
	my $rc = $qg->node->psql('postgres', "\\set VERBOSITY verbose\n$sql", stdout => \$out, stderr => \$err,
		on_error_stop => 1);
	return 'no error' if $rc == 0;
	return "$1 $2" if $err =~ /ERROR:\s+([0-9A-Z]{5}):\s+([^\n]*)/;
	return "unparsed error: $err";
}

# ---------------------------------------------------------------- HTTP

# A request on a new connection (closed afterwards), so any idle worker may take it.
sub fresh_request
{
	my ($qg, $method, $path, %o) = @_;
	return $qg->request($method, $path, %o, client => $qg->new_client(keep_alive => 0, timeout => timeouts(30)));
}

# Polls until $check (given a response from $make_request, each on a fresh connection) holds for
# $streak requests in a row (so every worker has seen a reloaded setting), bounded by
# $POLL_TIMEOUT seconds. Returns true on success.
sub poll_fresh
{
	my ($make_request, $check, %o) = @_;
	my $want = $o{streak} // 8;
	my $in_a_row = 0;
	return poll_until(
		sub {
			my $res = $make_request->();
			$in_a_row = $check->($res) ? $in_a_row + 1 : 0;
			return $in_a_row >= $want;
		});
}

# Sends a GET on its own connection and returns the socket without waiting for the answer.
sub start_request
{
	my ($qg, $path, %headers) = @_;
	my $sock = $qg->connect_raw;
	my $req = "GET $path HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
	$req .= "$_: $headers{$_}\r\n" for sort keys %headers;
	syswrite($sock, "$req\r\n");
	return $sock;
}

# Reads the answer of start_request until the server closes: { status, body, json }.
sub finish_request
{
	my ($sock, $timeout) = @_;
	my $got = read_until_close($sock, $timeout // 30);
	my ($head, $body) = split /\r\n\r\n/, $got, 2;
	$head //= '';
	$body //= '';
	my ($status) = $head =~ m{^HTTP/1\.\d (\d{3})};
	if ($head =~ /^Transfer-Encoding:\s*chunked/mi)
	{
		my $plain = '';
		while ($body =~ s/^([0-9a-fA-F]+)\r\n//)
		{
			my $len = hex $1;
			last if $len == 0;
			$plain .= substr($body, 0, $len, '');
			$body =~ s/^\r\n//;
		}
		$body = $plain;
	}
	return { status => $status // 0, body => $body, json => json_decode($body) };
}

# The body of an error response without its request_id, canonically encoded, to compare two
# refusals that were given different request ids.
sub body_without_request_id
{
	my ($res) = @_;
	my $j = $res->{json};
	return '(not a JSON object) ' . ($res->{content} // '') unless ref $j eq 'HASH';
	my %copy = %$j;
	delete $copy{request_id};
	return json_encode(\%copy);
}

# ---------------------------------------------------------------- both paths: /q/{name} and POST /sql

# The governance suites send each call of a saved query a second time, as POST /sql with the saved
# query's own text and the same query string and body, by the policy's twin: issue 46 asks that
# every side channel closed for saved queries stay closed for SQL a caller writes. The twin
# ("<policy>_sql") is a policy of its own because ad-hoc SQL needs a table allow-list and many of
# the policies these suites test have none. It runs as the policy's role, and right before each
# call its rules are made the policy's again: its masks, mask_predicates, hash_scope,
# statement_timeout and write operations, its allow-list (or `tables` while the policy has none),
# and ad-hoc SQL granted the policy's write operations. A rule a suite changes therefore holds
# for both paths from the next call, and a twin can never be left behind by a suite that forgot
# to change it too. One difference is the design's: the hash action's key is derived from the
# policy's name, so the twin hashes under its own; expected rows are built for $res->{policy}.

# $qg->adhoc_twin('policy', tables => [...]): declares the policy's twin (the policy exists); tables
# is its allow-list while the policy has none (every relation the suite's statements read; one
# not created yet joins it once it is).
sub adhoc_twin
{
	my ($self, $policy, %o) = @_;
	my ($run_as, $superuser) =
	  split /\|/, $self->sql('SELECT run_as, allow_superuser FROM querygate.policy WHERE name = ' . sql_quote($policy));
	die "adhoc_twin: no policy $policy" unless defined $superuser;
	my $twin = { policy => "${policy}_sql", tables => $o{tables} // [] };
	$twin->{key} = $self->access(policy => $twin->{policy},
		$superuser eq 't' ? (allow_superuser => 1) : (run_as => $run_as));
	$self->{twins}{$policy} = $twin;
	$self->sql(_twin_sync_sql($policy, $twin));
	return $twin->{policy};
}

# SQL that makes the twin's rules its policy's, changing nothing that is so already (a change is a
# catalog change every worker reloads).
sub _twin_sync_sql
{
	my ($policy, $twin) = @_;
	my $tables = 'ARRAY(SELECT rel FROM unnest(ARRAY[' . join(', ', map { sql_quote($_) } @{ $twin->{tables} })
	  . ']::text[]) WITH ORDINALITY AS n(name, i), to_regclass(n.name) AS rel WHERE rel IS NOT NULL ORDER BY i)';
	my ($o, $t) = (sql_quote($policy), sql_quote($twin->{policy}));
	return <<"SQL";
DO \$twin\$
DECLARE
	o querygate.policy;
	t querygate.policy;
	list regclass[];
	r record;
BEGIN
	SELECT * INTO STRICT o FROM querygate.policy WHERE name = $o;
	SELECT * INTO STRICT t FROM querygate.policy WHERE name = $t;
	list := coalesce(o.allowed_tables, $tables);
	IF t.allowed_tables IS DISTINCT FROM list THEN
		PERFORM querygate.allow_tables(t.name, list);
	END IF;
	IF t.write_ops IS DISTINCT FROM o.write_ops THEN
		PERFORM querygate.grant_writes(t.name, o.write_ops);
	END IF;
	IF NOT t.adhoc OR t.adhoc_write_ops IS DISTINCT FROM coalesce(o.write_ops, '{}') THEN
		PERFORM querygate.grant_adhoc(t.name, write_ops => coalesce(o.write_ops, '{}'));
	END IF;
	IF (t.mask_predicates, t.hash_scope, t.statement_timeout)
	   IS DISTINCT FROM (o.mask_predicates, o.hash_scope, o.statement_timeout) THEN
		PERFORM querygate.set_policy(t.name, mask_predicates => o.mask_predicates,
			hash_scope => coalesce(o.hash_scope, ''), statement_timeout => coalesce(o.statement_timeout, '0'));
	END IF;
	FOR r IN SELECT pattern FROM querygate.mask_rule WHERE policy = t.name
	         EXCEPT SELECT pattern FROM querygate.mask_rule WHERE policy = o.name LOOP
		PERFORM querygate.unmask(t.name, r.pattern);
	END LOOP;
	FOR r IN SELECT pattern, action FROM querygate.mask_rule WHERE policy = o.name
	         EXCEPT SELECT pattern, action FROM querygate.mask_rule WHERE policy = t.name LOOP
		PERFORM querygate.mask(t.name, r.pattern, r.action, force => true);
	END LOOP;
END
\$twin\$;
SQL
}

# $qg->both($method, '/q/<name>?<args>', key => $secret, json => {...}, ...): the call as a suite
# makes it, then its twin: POST /sql?<args> with {"sql": the saved query's text} and the same body
# fields, with the key of the policy's twin. The key must be one access() made, of a policy with
# a twin. between => sub {...} runs between the two calls (to put back what a write changed, so
# the second call meets what the first did). Returns (the saved query's answer, the statement's),
# each with {via} ('/q' or '/sql'), {policy} (whose answer it is) and {took} (its seconds);
# expect_rows and expect_error say which in their names, and same_answer compares the two.
# A caller that is not the twin's own key (a key with a tenant, a bearer token) says whose twin
# answers and how it authenticates: policy => 'p', twin_auth => [bearer => $token naming p's twin]
# (or [key => a key of the twin's, made by access(policy => 'p_sql', ...)]).
sub both
{
	my ($self, $method, $path, %o) = @_;
	my ($name, $args) = $path =~ m{^/q/([^/?]+)(\?.*)?\z} or die "both: not a saved query's path: $path";
	my $policy = delete $o{policy} // $self->{policy_of_key}{ $o{key} // '' }
	  // die "both: a key that access() made, or policy =>";
	my $twin = $self->{twins}{$policy} // die "both: policy $policy has no twin (adhoc_twin)";
	my @twin_auth = @{ delete $o{twin_auth} // [ key => $twin->{key} ] };
	my $text = $self->sql(_twin_sync_sql($policy, $twin)
		  . 'SELECT to_json(sql) FROM querygate.saved_query WHERE name = ' . sql_quote($name));
	die "both: no saved query $name" unless length $text;
	my $between = delete $o{between};
	my $t0 = time();
	my $saved = $self->request($method, $path, %o);
	@$saved{qw(via policy took)} = ('/q', $policy, time() - $t0);
	$between->() if $between;
	$t0 = time();
	delete @o{qw(key bearer)};
	my $adhoc = $self->request('POST', '/sql' . ($args // ''), %o, @twin_auth,
		json => { %{ $o{json} // {} }, sql => json_decode($text) });
	@$adhoc{qw(via policy took)} = ('/sql', $twin->{policy}, time() - $t0);
	return ($saved, $adhoc);
}

# Asserts that both()'s two answers are one: the same status and, for a 200, the same rows (the
# same body when it is not JSON), else the same error code. 1 assertion.
sub same_answer
{
	my ($self, $saved, $adhoc, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $what = sub {
		my ($res) = @_;
		my $j = $res->{json};
		return [ $res->{status}, $res->{status} == 200 ? ($j // $res->{content}) : ref $j eq 'HASH' ? $j->{code} : undef ];
	};
	is_deeply($what->($adhoc), $what->($saved), "$name: POST /sql answers as the saved query does")
	  or diag('/q: ' . describe($saved) . "\n/sql: " . describe($adhoc));
}

# A test's name for an answer of both(): as it is for /q, with " (POST /sql)" for the statement's.
sub on_path
{
	my ($res, $name) = @_;
	return ($res->{via} // '') eq '/sql' ? "$name (POST /sql)" : $name;
}

sub get_both { my ($self, $path, %o) = @_; return $self->both('GET', $path, %o); }

# $qg->as_now('table'): a sub that puts the table's rows back as they are now, for both()'s
# between when the first path's write must not be seen by the second. It runs as the superuser,
# whom row-level security hides no row from.
sub as_now
{
	my ($self, $table) = @_;
	my $copy = 'qg_as_now_' . ++$self->{as_now};
	$self->sql("CREATE TABLE $copy AS SELECT * FROM $table");
	return sub { $self->sql("DELETE FROM $table; INSERT INTO $table SELECT * FROM $copy;") };
}

# post_both($path, $perl_body, %o), as post().
sub post_both
{
	my ($self, $path, $body, %o) = @_;
	return $self->both('POST', $path, (defined $body ? (json => $body) : ()), %o);
}

# ---------------------------------------------------------------- JWT

sub b64url
{
	my ($bytes) = @_;
	my $s = encode_base64($bytes, '');
	$s =~ tr{+/}{-_};
	$s =~ s/=+$//;
	return $s;
}

sub b64url_decode
{
	my ($s) = @_;
	$s =~ tr{-_}{+/};
	$s .= '=' x ((4 - length($s) % 4) % 4);
	return decode_base64($s);
}

sub segment
{
	my ($v) = @_;
	return b64url(ref $v ? json_encode($v) : $v);
}

# An HS256 token: header {"alg":"HS256","typ":"JWT"} plus %header, the claims, HMAC-SHA-256
# with $secret (any bytes, for example a public key's PEM).
sub jwt_hs256
{
	my ($claims, $secret, %header) = @_;
	my $input = segment({ alg => 'HS256', typ => 'JWT', %header }) . '.' . segment($claims);
	return $input . '.' . b64url(hmac_sha256($input, $secret));
}

# A token with the given header and no signature ("alg":"none").
sub jwt_unsigned
{
	my ($claims, %header) = @_;
	return segment({ alg => 'none', typ => 'JWT', %header }) . '.' . segment($claims) . '.';
}

sub run_openssl
{
	my (@args) = @_;
	my ($stdout, $stderr) = run_command([ 'openssl', @args ]);
	return $stdout;
}

sub slurp_bytes
{
	my ($file) = @_;
	open my $fh, '<:raw', $file or die "$file: $!";
	local $/;
	my $b = <$fh>;
	close $fh;
	return $b;
}

# A new private key in $dir: type 'rsa' (2048 bits) or 'ec' (P-256). Returns its PEM file.
sub openssl_key
{
	my ($dir, $type, $name) = @_;
	my $file = "$dir/$name.pem";
	if ($type eq 'rsa')
	{
		run_openssl('genpkey', '-algorithm', 'RSA', '-pkeyopt', 'rsa_keygen_bits:2048', '-out', $file);
	}
	else
	{
		run_openssl('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', $file);
	}
	die "openssl did not write $file" unless -s $file;
	return $file;
}

# The public key of a private key file, as PEM text.
sub public_pem
{
	my ($keyfile) = @_;
	my $out = "$keyfile.pub.pem";
	run_openssl('pkey', '-in', $keyfile, '-pubout', '-out', $out);
	return slurp_bytes($out);
}

# The JWK of an RSA key's public part: n and e as base64url of their big-endian bytes.
sub rsa_jwk
{
	my ($keyfile, %extra) = @_;
	my $text = run_openssl('rsa', '-in', $keyfile, '-noout', '-text');
	my $mod = run_openssl('rsa', '-in', $keyfile, '-noout', '-modulus');
	my ($hex) = $mod =~ /Modulus=([0-9A-Fa-f]+)/ or die "no modulus in: $mod";
	my ($e) = $text =~ /publicExponent:\s*(\d+)/ or die "no exponent in: $text";
	my $ehex = sprintf('%x', $e);
	$ehex = "0$ehex" if length($ehex) % 2;
	$hex = "0$hex" if length($hex) % 2;
	my $n = pack('H*', $hex);
	$n =~ s/^\x00+//;
	return { kty => 'RSA', n => b64url($n), e => b64url(pack('H*', $ehex)), %extra };
}

# The JWK of a P-256 key's public part: x and y from the uncompressed point that ends the DER
# SubjectPublicKeyInfo.
sub ec_jwk
{
	my ($keyfile, %extra) = @_;
	my $der = "$keyfile.pub.der";
	run_openssl('pkey', '-in', $keyfile, '-pubout', '-outform', 'DER', '-out', $der);
	my $spki = slurp_bytes($der);
	my $point = substr($spki, -65);
	die 'not an uncompressed P-256 point' unless substr($point, 0, 1) eq "\x04";
	return {
		kty => 'EC',
		crv => 'P-256',
		x => b64url(substr($point, 1, 32)),
		y => b64url(substr($point, 33, 32)),
		%extra
	};
}

# DER ECDSA-Sig-Value (SEQUENCE of two INTEGERs) to JWS's r || s, 32 bytes each.
sub ecdsa_der_to_raw
{
	my ($der) = @_;
	my @b = unpack('C*', $der);
	my $i = 0;
	die 'not a DER sequence' unless $b[$i++] == 0x30;
	my $len = $b[$i++];
	$i++ if $len & 0x80;    # never longer than 127 for P-256, but be safe with one length byte
	my @ints;
	for (1 .. 2)
	{
		die 'not a DER integer' unless $b[$i++] == 0x02;
		my $l = $b[$i++];
		my $v = pack('C*', @b[ $i .. $i + $l - 1 ]);
		$i += $l;
		$v =~ s/^\x00+//;
		die 'integer longer than 32 bytes' if length $v > 32;
		push @ints, ("\x00" x (32 - length $v)) . $v;
	}
	return $ints[0] . $ints[1];
}

# An RS256 or ES256 token signed by the openssl command with $keyfile; $dir holds scratch files.
sub jwt_openssl
{
	my ($alg, $keyfile, $claims, %header) = @_;
	my $input = segment({ alg => $alg, typ => 'JWT', %header }) . '.' . segment($claims);
	my $in = "$keyfile.input";
	my $sig = "$keyfile.sig";
	open my $fh, '>:raw', $in or die "$in: $!";
	print $fh $input;
	close $fh;
	unlink $sig;
	run_openssl('dgst', '-sha256', '-sign', $keyfile, '-out', $sig, $in);
	my $raw = slurp_bytes($sig);
	$raw = ecdsa_der_to_raw($raw) if $alg eq 'ES256';
	return $input . '.' . b64url($raw);
}

# ---------------------------------------------------------------- structured fields (RFC 9651)

# A List field's members, each [value, {key => value}], every value a pair [type, value] (type
# integer, decimal, string, token or boolean); undef when the text is not a valid List. Inner
# lists and byte sequences are not needed here and are refused.
sub sf_list
{
	my ($s) = @_;
	return undef unless defined $s;
	$s =~ s/^ +//;
	$s =~ s/ +$//;
	my @members;
	return \@members if $s eq '';
	while (1)
	{
		my ($item, $rest) = _sf_bare($s);
		return undef unless defined $item;
		my %params;
		while ($rest =~ s/^;[ ]*//)
		{
			return undef unless $rest =~ s/^([a-z*][a-z0-9_\-.*]*)//;
			my $key = $1;
			my $value = [ 'boolean', 1 ];
			if ($rest =~ s/^=//)
			{
				($value, $rest) = _sf_bare($rest);
				return undef unless defined $value;
			}
			$params{$key} = $value;
		}
		push @members, [ $item, \%params ];
		$rest =~ s/^[ \t]+//;
		return \@members if $rest eq '';
		return undef unless $rest =~ s/^,[ \t]*//;
		return undef if $rest eq '';
		$s = $rest;
	}
}

sub _sf_bare
{
	my ($s) = @_;
	return ([ 'decimal', $1 + 0 ], $2) if $s =~ /^(-?\d{1,12}\.\d{1,3})(?![\d.])(.*)$/s;
	return ([ 'integer', $1 + 0 ], $2) if $s =~ /^(-?\d{1,15})(?![\d.])(.*)$/s;
	if ($s =~ /^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*)"(.*)$/s)
	{
		my ($v, $rest) = ($1, $2);
		$v =~ s/\\(["\\])/$1/g;
		return ([ 'string', $v ], $rest);
	}
	return ([ 'token', $1 ], $2) if $s =~ /^([A-Za-z*][!#\$%&'*+\-.^_`|~0-9A-Za-z:\/]*)(.*)$/s;
	return ([ 'boolean', $1 + 0 ], $2) if $s =~ /^\?([01])(.*)$/s;
	return;
}

# An answer's rate-limit fields (the IETF draft's, src/http/limit_fields.hpp), each parsed as a
# Structured Field: {policy, r, t} from RateLimit and {q, w} from RateLimit-Policy, for the fields
# present; dies when one is present and not one member named by a String with Integer
# parameters r and t (q and w).
sub limit_fields
{
	my ($res) = @_;
	my %out;
	for my $f ([ 'ratelimit', 'r', 't' ], [ 'ratelimit-policy', 'q', 'w' ])
	{
		my ($name, @params) = @$f;
		my $text = $res->{headers}{$name};
		next unless defined $text;
		my $list = sf_list($text);
		die "$name is not a Structured Field List: $text" unless $list && @$list == 1;
		my ($item, $p) = @{ $list->[0] };
		die "$name does not name its policy with a String: $text" unless $item->[0] eq 'string';
		die "$name names policy $item->[1], RateLimit $out{policy}: $text"
		  if defined $out{policy} && $out{policy} ne $item->[1];
		$out{policy} = $item->[1];
		for my $k (@params)
		{
			die "$name has no Integer $k: $text" unless ($p->{$k}[0] // '') eq 'integer';
			$out{$k} = $p->{$k}[1];
		}
	}
	return \%out;
}

1;
