# Helpers for the governance end-to-end tests (test/t/02*.pl), on top of QuerygateTest:
#
#   - values computed independently of querygate: the HMAC-SHA-256 of the hash mask (with the
#     secret read from querygate.mask_secret as superuser), the text of the mask action, and the
#     text PostgreSQL itself gives a column (texts), so expected masked rows are built in Perl;
#   - SQL errors with their SQLSTATE (sql_error), row counts (scalar);
#   - requests on a fresh connection and polling for a reloaded setting across every worker
#     (poll_fresh), a request left running on its own connection (start_request/finish_request);
#   - JWTs: HS256 signed with Digest::SHA, RS256 and ES256 signed with the openssl command, and the
#     JWKS of their public keys.
package GovernanceTest;

use strict;
use warnings;

use Exporter 'import';
use Digest::SHA qw(hmac_sha256 hmac_sha256_hex sha256);
use HTTP::Tiny;
use IO::Select;
use IO::Socket::INET;
use MIME::Base64 qw(encode_base64 decode_base64);
use PostgreSQL::Test::Utils;
use QuerygateTest;
use Test::More;
use Time::HiRes qw(time usleep);

our @EXPORT = qw(policy_key key_for mask_secret hmac_of masked_text texts column_texts scalar_sql sql_error fresh_request
  poll_fresh start_request finish_request b64url b64url_decode jwt_hs256 jwt_unsigned
  openssl_key rsa_jwk ec_jwk public_pem jwt_openssl body_without_request_id expect_refusal
  expect_json);

# ---------------------------------------------------------------- independent values

# The secret of the hash mask, as bytes: the oldest row of querygate.mask_secret (the one in use).
sub mask_secret
{
	my ($qg) = @_;
	my $hex = $qg->sql('SELECT encode(secret, \'hex\') FROM querygate.mask_secret ORDER BY created_at LIMIT 1');
	die "no mask secret" unless $hex =~ /^[0-9a-f]{64,}$/;
	return pack('H*', $hex);
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

# The mask action on a text: its first character and ***, then the domain of an email
# (from the last '@').
sub masked_text
{
	my ($text) = @_;
	return undef unless defined $text;
	my $out = (length $text ? substr($text, 0, 1) : '') . '***';
	my $at = rindex($text, '@');
	$out .= substr($text, $at) if $at >= 0;
	return $out;
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

# The same for one column: a list.
sub texts
{
	my ($qg, $select, $col) = @_;
	return column_texts($qg, $select, $col)->{$col};
}

sub scalar_sql
{
	my ($qg, $sql) = @_;
	return $qg->sql($sql);
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

# Creates a policy, grants it the queries and, unless key => undef, creates a key: in two psql
# runs (QuerygateTest::access takes one per grant). Returns the key's secret.
# policy_key($qg, 'name', run_as => 'role', queries => [...], key => 'keyname',
#            key_args => "allowed_ips => '{...}'", setup => "more SQL run with the grants")
sub policy_key
{
	my ($qg, $policy, %o) = @_;
	my $p = sql_quote($policy);
	# Without run_as: the test's superuser, asked for by name (see QuerygateTest::access).
	my $run_as = defined $o{run_as} ? ', ' . sql_quote($o{run_as}) : ', allow_superuser => true';
	my $list = join(', ', map { sql_quote($_) } @{ $o{queries} // [] });
	my $sql = "SELECT querygate.create_policy($p$run_as);\n";
	$sql .= "SELECT count(querygate.grant_query($p, q)) FROM unnest(ARRAY[$list]::text[]) AS q;\n" if length $list;
	$sql .= $o{setup} // '';
	$qg->sql($sql);
	return undef if exists $o{key} && !defined $o{key};
	return key_for($qg, $policy, %o);
}

# Another key for a policy: key => name (default: the policy's name plus a number), key_args =>
# extra named arguments of create_key.
my $key_number = 0;
sub key_for
{
	my ($qg, $policy, %o) = @_;
	my $name = $o{key} // $policy . '_key' . ++$key_number;
	my $args = defined $o{key_args} ? ", $o{key_args}" : '';
	return $qg->sql('SELECT querygate.create_key(' . sql_quote($name) . ', ' . sql_quote($policy) . "$args)");
}

# ---------------------------------------------------------------- HTTP

# A request on a new connection (closed afterwards), so any idle worker may take it.
sub fresh_request
{
	my ($qg, $method, $path, %o) = @_;
	my $client = HTTP::Tiny->new(keep_alive => 0, timeout => 30);
	return $qg->request($method, $path, %o, client => $client);
}

# Polls until $check (given a response from $make_request, each on a fresh connection) holds for
# $streak requests in a row (so every worker has seen a reloaded setting), bounded by
# $QuerygateTest::POLL_TIMEOUT seconds. Returns true on success.
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
	my $sock = IO::Socket::INET->new(
		PeerAddr => '127.0.0.1',
		PeerPort => $qg->port,
		Proto => 'tcp',
		Timeout => 5) or die "connect: $!";
	$sock->autoflush(1);
	my $req = "GET $path HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n";
	$req .= "$_: $headers{$_}\r\n" for sort keys %headers;
	syswrite($sock, "$req\r\n");
	return $sock;
}

# Reads the answer of start_request until the server closes: { status, body, json }.
sub finish_request
{
	my ($sock, $timeout) = @_;
	my $got = QuerygateTest::read_until_close($sock, $timeout // 30);
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

# expect_error plus a check that the message names something (a table, a column): 3 assertions.
sub expect_refusal
{
	my ($qg, $res, $status, $code, $name, $names) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	$qg->expect_error($res, $status, $code, $name);
	if (defined $names)
	{
		my $msg = ref $res->{json} eq 'HASH' ? ($res->{json}{error} // '') : '';
		like($msg, $names, "$name: the message names it") or diag(QuerygateTest::describe($res));
	}
}

# Asserts status 200 and the body decoded equal to $want: 1 assertion.
sub expect_json
{
	my ($res, $want, $name) = @_;
	local $Test::Builder::Level = $Test::Builder::Level + 1;
	my $ok = $res->{status} == 200 && defined $res->{json};
	if ($ok)
	{
		return is_deeply($res->{json}, $want, $name) || diag(QuerygateTest::describe($res));
	}
	fail($name);
	diag(QuerygateTest::describe($res));
	return 0;
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

1;
