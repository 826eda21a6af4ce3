# Answers in JSON, NDJSON, CSV and TSV (src/call/row_output.hpp, src/http/content_negotiation.hpp),
# read by parsers no one here wrote (test/clients/parse_answer.py: Python's json and csv modules,
# and COPY's text format for TSV): values with commas, quotes, line breaks, tabs, backslashes,
# leading spaces and multibyte letters come back as they are stored; NULL and the empty string stay
# apart; masked, hashed and dropped columns are served as in JSON; Accept is negotiated by its
# q-values and wildcards, ?format= (and the body's "format") wins over it, and what no format
# answers is 406 not_acceptable; errors stay JSON; a write answers rows_affected in the format,
# also from a write helper.
use strict;
use warnings;
use JSON::PP;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $qg = QuerygateTest->start(name => 'formats', conf => "querygate.allow_writes = on\n");
$qg->sql(q{
	CREATE TABLE fmt_t (id int PRIMARY KEY, name text, note text, flag bool, amount numeric, doc jsonb,
	                    ssn text, email text, secret text);
	INSERT INTO fmt_t VALUES
	  (1, 'plain', NULL, true, 1.50, '{"a": [1, "x"]}', '123-45-6789', 'jane@example.com', 's1'),
	  (2, 'comma, "quoted"', '', false, -0.001, 'null', '987-65-4321', 'bob@example.org', 's2'),
	  (3, E'line\r\nbreak\ttab \\\\ back', ' spaced ', NULL, 'NaN', '"str"', NULL, NULL, NULL),
	  (4, 'ünïcödé ✓', E'\\\\.', true, 12345678901234567890.123, '[]', 'x', 'noat', 's4');
	SELECT querygate.save_query('fmt_all', 'SELECT id, name, note, flag, amount, doc FROM fmt_t ORDER BY id');
	SELECT querygate.save_query('fmt_none', 'SELECT id, name FROM fmt_t WHERE id < :below ORDER BY id');
	SELECT querygate.save_query('fmt_masked', 'SELECT id, ssn, email, secret FROM fmt_t ORDER BY id');
	SELECT querygate.save_query('fmt_touch', 'UPDATE fmt_t SET flag = NOT flag WHERE id = :id');
});
$qg->role('fmt_role', select => ['fmt_t'], grant => []);
$qg->sql('GRANT UPDATE ON fmt_t TO fmt_role');
my $key = $qg->access(policy => 'fmt_pol', run_as => 'fmt_role',
	queries => [qw(fmt_all fmt_none fmt_masked fmt_touch)],
	setup => q{
		SELECT querygate.grant_writes('fmt_pol', '{update}');
		SELECT querygate.mask('fmt_pol', 'public.fmt_t.ssn', 'hash');
		SELECT querygate.mask('fmt_pol', 'public.fmt_t.email', 'mask_email');
		SELECT querygate.mask('fmt_pol', 'public.fmt_t.secret', 'drop');
	});


sub call
{
	my ($path, %headers) = @_;
	return $qg->get($path, key => $key, headers => \%headers);
}

my @columns = qw(id name note flag amount doc);
# Each row as its values' text (COPY's), undef for NULL.
my @text_rows = (
	[ '1', 'plain', undef, 't', '1.50', '{"a": [1, "x"]}' ],
	[ '2', 'comma, "quoted"', '', 'f', '-0.001', 'null' ],
	[ '3', "line\r\nbreak\ttab \\ back", ' spaced ', undef, 'NaN', '"str"' ],
	[ '4', "\x{fc}n\x{ef}c\x{f6}d\x{e9} \x{2713}", '\\.', 't', '12345678901234567890.123', '[]' ],
);

# --- JSON, the default, as before
my $json = call('/q/fmt_all');
is($json->{status}, 200, 'JSON: 200');
is($json->{headers}{'content-type'}, 'application/json', 'JSON: its content type');
is($json->{headers}{vary}, 'Accept, Accept-Encoding', 'the answer varies by Accept');
my $rows = parse_answer('json', $json->{content});
is(scalar(@$rows), 4, 'JSON: four rows');
is($rows->[2]{name}, $text_rows[2][1], 'JSON: a value with a line break, a tab and a backslash');
is($rows->[1]{note}, '', 'JSON: the empty string');
ok(!defined $rows->[0]{note}, 'JSON: NULL is null');

# --- NDJSON
my $nd = call('/q/fmt_all', Accept => 'application/x-ndjson');
is($nd->{status}, 200, 'NDJSON: 200');
is($nd->{headers}{'content-type'}, 'application/x-ndjson', 'NDJSON: its content type');
is_deeply(parse_answer('ndjson', $nd->{content}), $rows, 'NDJSON: one line per row, each the JSON row');
is(($nd->{content} =~ tr/\n//), 4, 'NDJSON: four lines');

# --- CSV
my $csv = call('/q/fmt_all', Accept => 'text/csv');
is($csv->{status}, 200, 'CSV: 200');
is($csv->{headers}{'content-type'}, 'text/csv; charset=utf-8; header=present', 'CSV: its content type');
is($csv->{headers}{'x-page'}, '1', 'CSV: the paging headers too');
my $records = parse_answer('csv', $csv->{content});
is_deeply($records->[0], \@columns, 'CSV: a header row of the column names');
is_deeply([ @$records[ 1 .. 4 ] ], [ map { [ map { $_ // '' } @$_ ] } @text_rows ],
	"CSV: Python's csv module reads every value back as stored (commas, quotes, CRLF, a tab, a backslash, spaces, multibyte letters)");
my @lines = split /\r\n/, $csv->{content};
is($lines[1], q{1,plain,,t,1.50,"{""a"": [1, ""x""]}"}, 'CSV: NULL is an empty field; quotes are doubled inside quotes');
is($lines[2], q{2,"comma, ""quoted""","",f,-0.001,null}, 'CSV: the empty string is "" (apart from NULL)');
like($csv->{content}, qr/\r\n\z/, 'CSV: records end with CRLF');

# --- TSV
my $tsv = call('/q/fmt_all?format=tsv');
is($tsv->{status}, 200, 'TSV: 200');
is($tsv->{headers}{'content-type'}, 'text/tab-separated-values; charset=utf-8', 'TSV: its content type');
is_deeply(parse_answer('tsv', $tsv->{content}), [ \@columns, @text_rows ],
	'TSV: every value back as stored, \\N as NULL (the COPY text format)');
like($tsv->{content}, qr/^3\tline\\r\\nbreak\\ttab \\\\ back\t spaced \t\\N\t/m, 'TSV: CR, LF, tab and backslash are escaped');

# --- no rows: the header alone
my $none = call('/q/fmt_none?below=0&format=csv');
is($none->{content}, "id,name\r\n", 'CSV without rows: the header row alone');
is(call('/q/fmt_none?below=0&format=ndjson')->{content}, '', 'NDJSON without rows: nothing');
is(call('/q/fmt_none?below=0&format=tsv')->{content}, "id\tname\n", 'TSV without rows: the header row alone');

# --- masks apply alike
my $mjson = parse_answer('json', call('/q/fmt_masked')->{content});
is_deeply([ sort keys %{ $mjson->[0] } ], [qw(email id ssn)], 'masked JSON: the dropped column is left out');
like($mjson->[0]{ssn}, qr/^[0-9a-f]{64}$/, 'masked JSON: the hashed column is an HMAC');
is($mjson->[0]{email}, 'j***@example.com', 'masked JSON: the masked column (mask_email)');
my $mcsv = parse_answer('csv', call('/q/fmt_masked', Accept => 'text/csv')->{content});
is_deeply($mcsv->[0], [qw(id ssn email)], 'masked CSV: the dropped column is not in the header');
is_deeply([ map { [ $_->{id}, $_->{ssn} // '', $_->{email} // '' ] } @$mjson ], [ @$mcsv[ 1 .. 4 ] ],
	'masked CSV: the same hashes and masks as JSON, NULL empty');
my $mtsv = parse_answer('tsv', call('/q/fmt_masked?format=tsv')->{content});
is_deeply([ @$mtsv[ 1 .. 4 ] ], [ map { [ "$_->{id}", $_->{ssn}, $_->{email} ] } @$mjson ],
	'masked TSV: the same, NULL as \\N');

# --- negotiation
my @negotiated = (
	[ 'no Accept', {}, 'application/json' ],
	[ 'Accept: application/json', { Accept => 'application/json' }, 'application/json' ],
	[ 'Accept: text/tab-separated-values', { Accept => 'text/tab-separated-values' }, 'text/tab-separated-values' ],
	[ 'Accept: */*', { Accept => '*/*' }, 'application/json' ],
	[ 'Accept: text/* (CSV before TSV)', { Accept => 'text/*' }, 'text/csv' ],
	[ 'q-values: the higher wins', { Accept => 'text/csv;q=0.5, application/x-ndjson;q=0.8' }, 'application/x-ndjson' ],
	[ 'equal q-values: the first named wins', { Accept => 'text/csv, application/json' }, 'text/csv' ],
	[ 'q=0 refuses a type a wildcard allows', { Accept => 'application/json;q=0, */*' }, 'application/x-ndjson' ],
	[ 'the most specific range decides', { Accept => 'text/*;q=0.2, text/tab-separated-values, application/json;q=0.5' },
		'text/tab-separated-values' ],
	[ "a browser's Accept", { Accept => 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' }, 'application/json' ],
	[ 'case and spaces', { Accept => ' TEXT/CSV ; Q=1 ' }, 'text/csv' ],
);
for my $n (@negotiated)
{
	my ($name, $headers, $type) = @$n;
	my $res = $qg->get('/q/fmt_all', key => $key, headers => $headers);
	is($res->{status} . ' ' . ($res->{headers}{'content-type'} =~ s/;.*//r), "200 $type", "$name: $type");
}
my $wins = call('/q/fmt_all?format=csv', Accept => 'application/json');
is($wins->{headers}{'content-type'} =~ s/;.*//r, 'text/csv', '?format= wins over Accept');
my $posted = $qg->post('/q/fmt_none', { params => { below => 3 }, format => 'tsv' }, key => $key);
is($posted->{content}, "id\tname\n1\tplain\n2\tcomma, \"quoted\"\n", 'POST with "format": "tsv"');
for my $refused ([ 'Accept: application/xml', '/q/fmt_all', { Accept => 'application/xml' } ],
	[ 'Accept: text/csv;q=0', '/q/fmt_all', { Accept => 'text/csv;q=0' } ],
	[ '?format=xml', '/q/fmt_all?format=xml', {} ],
	[ '?format=CSV (names are lowercase)', '/q/fmt_all?format=CSV', {} ])
{
	my ($name, $path, $headers) = @$refused;
	my $res = $qg->get($path, key => $key, headers => $headers);
	$qg->expect_error($res, 406, 'not_acceptable', "$name: 406");
	like($res->{json}{error} // '', qr{text/csv}, "$name: the message names what is offered");
}
$qg->expect_error($qg->post('/q/fmt_all', { format => 1 }, key => $key), 406, 'not_acceptable',
	'"format": 1 in a body: 406');

# --- errors stay JSON
my $bad = call('/q/fmt_none?below=x', Accept => 'text/csv');
is($bad->{status}, 400, 'a bad parameter asked for as CSV: 400');
is($bad->{headers}{'content-type'}, 'application/json', 'and the error is JSON');
is($bad->{json}{code}, 'param_invalid', 'with its code');
my $anon = $qg->get('/q/fmt_all?format=xml');
is($anon->{status}, 401, 'without a key, an unknown format is not looked at: 401');

# --- a write answers in the format (through a write helper: the format travels with the call)
sub write_call
{
	my ($path, %headers) = @_;
	return $qg->post($path, undef, key => $key, headers => \%headers);
}
is(write_call('/q/fmt_touch?id=1', Accept => 'text/csv')->{content}, "rows_affected\r\n1\r\n", 'a write as CSV');
is(write_call('/q/fmt_touch?id=1&format=tsv')->{content}, "rows_affected\n1\n", 'a write as TSV');
is(write_call('/q/fmt_touch?id=9&format=ndjson')->{content}, "{\"rows_affected\":0}\n", 'a write as NDJSON');
is(write_call('/q/fmt_touch?id=1')->{content}, '{"rows_affected":1}', 'a write as JSON, as before');
is($qg->sql('SELECT flag FROM fmt_t WHERE id = 1'), 'f', 'three writes of row 1 were made');

done_testing();
