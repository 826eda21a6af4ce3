# Shared helpers for the querygate HTTP end-to-end tests (test/t/*.pl).
#
# A test starts its own cluster with the library preloaded and a free HTTP port, creates the
# extension, and waits (polling, bounded) until GET /health answers 200:
#
#   my $qg = QuerygateTest->start(name => 'main', workers => 2);
#   my $secret = $qg->access(policy => 'reader', queries => ['account']);
#   my $res = $qg->get('/q/account?aid=7', key => $secret);
#   $qg->expect_rows($res, [ { aid => 7 } ], 'one row');
#
# Responses are HTTP::Tiny hashes plus {json} (the decoded body, or undef when it is not JSON).
package QuerygateTest;

use strict;
use warnings;

use Exporter 'import';
use HTTP::Tiny;
use IO::Select;
use IO::Socket::INET;
use JSON::PP;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time usleep);

our @EXPORT = qw(pct query_string json_encode json_decode poll_until sql_quote read_until_close
  read_response);

# Seconds any readiness poll may take before the test gives up.
our $POLL_TIMEOUT = 30;

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

# start(name => 'main', workers => 2, preload => 1, extension => 1, conf => "extra lines\n")
sub start
{
	my ($class, %o) = @_;
	my $name = $o{name} // 'main';
	my $preload = $o{preload} // 1;
	my $node = PostgreSQL::Test::Cluster->new($name);
	$node->init;
	my $http_port = PostgreSQL::Test::Cluster::get_free_port();
	my $conf = "timezone = 'UTC'\nlog_min_messages = info\n";
	if ($preload)
	{
		$conf .= "shared_preload_libraries = 'querygate'\n"
		  . "querygate.port = $http_port\n"
		  . "querygate.database = 'postgres'\n"
		  . 'querygate.workers = ' . ($o{workers} // 2) . "\n";
	}
	$conf .= $o{conf} if defined $o{conf};
	$node->append_conf('postgresql.conf', $conf);
	$node->start;

	my $self = bless {
		node => $node,
		port => $http_port,
		http => HTTP::Tiny->new(keep_alive => 1, timeout => 60),
		keyn => 0,
	}, $class;

	$node->safe_psql('postgres', 'CREATE EXTENSION querygate') if $o{extension} // 1;
	if ($preload)
	{
		my $ok = $self->wait_health;
		BAIL_OUT("querygate did not answer GET /health with 200 within ${POLL_TIMEOUT}s")
		  unless $ok;
	}
	return $self;
}

sub node { return $_[0]{node}; }
sub port { return $_[0]{port}; }
sub base_url { return 'http://127.0.0.1:' . $_[0]{port}; }

# A new HTTP::Tiny client (its own connection).
sub new_client
{
	my ($self, %o) = @_;
	return HTTP::Tiny->new(keep_alive => 1, timeout => 60, %o);
}

sub wait_health
{
	my ($self) = @_;
	my $probe = HTTP::Tiny->new(keep_alive => 0, timeout => 5);
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

# ALTER SYSTEM SET name = value (value is quoted) and reload. The change reaches the workers
# asynchronously: callers poll for the new behaviour.
sub set_and_reload
{
	my ($self, $name, $value) = @_;
	$self->sql("ALTER SYSTEM SET $name = " . sql_quote($value));
	$self->sql('SELECT pg_reload_conf()');
}

# Creates a policy (unless this object created it before), grants it the queries and creates a key. Returns the secret.
# access(policy => 'p', run_as => 'role', queries => [...], key => 'name', expires_at => 'sql expr')
# Without run_as, the policy runs as the test's superuser, which a policy must ask for by name
# (allow_superuser => true): tests of HTTP mechanics need no privilege model of their own.
sub access
{
	my ($self, %o) = @_;
	my $policy = $o{policy} // 'reader';
	unless ($self->{policies}{$policy}++)
	{
		my $run_as = defined $o{run_as} ? ', ' . sql_quote($o{run_as}) : ', allow_superuser => true';
		$self->sql('SELECT querygate.create_policy(' . sql_quote($policy) . "$run_as)");
	}
	for my $q (@{ $o{queries} // [] })
	{
		$self->sql('SELECT querygate.grant_query(' . sql_quote($policy) . ', ' . sql_quote($q) . ')');
	}
	my $key = $o{key} // ('key' . ++$self->{keyn});
	my $exp = defined $o{expires_at} ? ", $o{expires_at}" : '';
	return $self->sql('SELECT querygate.create_key(' . sql_quote($key) . ', ' . sql_quote($policy) . "$exp)");
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

# Asserts status 200 and that the body decodes to $rows (a Perl structure). 2 assertions.
sub expect_rows
{
	my ($self, $res, $rows, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	is($res->{status}, 200, "$name: status 200") or diag(describe($res));
	is_deeply($res->{json}, $rows, "$name: rows") or diag(describe($res));
}

# Asserts an error response: "<status> <code>", the body shape
# {"error": non-empty, "code", "request_id" = X-Request-Id header} (+ "errors" for parameter
# errors), and, with param => 'name', that "errors" names that parameter. 2 or 3 assertions.
sub expect_error
{
	my ($self, $res, $status, $code, $name, %o) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
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
	my $timeout = $o{timeout} // 5;
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
	my ($sock, $timeout) = @_;
	my ($head, $body, $sel, $deadline) = ('', '', IO::Select->new($sock), time() + $timeout);
	my $len;
	while (time() < $deadline)
	{
		if (defined $len)
		{
			return (($head =~ m{^HTTP/1\.\d (\d+)})[0], $body) if length($body) >= $len;
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

1;
