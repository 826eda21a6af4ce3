# What a caller is served under the mask actions that keep part of a text (src/rules/mask_rules.hpp,
# src/call/row_output.cpp): mask shows a first character and *** whatever the value (an address
# with credentials in it shows no host, an e-mail address no domain), mask_email keeps the domain
# of a value that is an e-mail address and nothing more of any other, partial(lead, trail) keeps
# the ends it names and *** alone when that would hide nothing; characters are counted, not bytes;
# the blanks that pad a char(n) are never shown (so neither is its length); a value of another
# type is null. JSON, CSV and TSV agree; /catalog and /openapi.json say what each column shows.
# Every call is also sent as POST /sql with the query's text, by a twin of the policy with the same
# rules, granted ad-hoc SQL (QuerygateTest::both), and answers alike in every format.
use strict;
use warnings;
use utf8;
use JSON::PP;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $qg = QuerygateTest->start(name => 'mask_actions', initdb => [ '--encoding=UTF8', '--locale=C' ]);
$qg->sql(q{
	CREATE TABLE ma_contacts (id int PRIMARY KEY, email text, dsn text, card text, code char(10),
	                          tag varchar(20), pin int, nick text);
	INSERT INTO ma_contacts VALUES
	  (1, 'jane.doe@example.com', 'postgres://admin:S3cretPW@10.0.0.5:5432/prod', '4111111111111111',
	   'AB12', 'héllo wörld', 1234, 'xavier'),
	  (2, 'admin:pw@host.example.com', 'ops@example.com', '12345', 'ABCDEFGHIJ', 'ab€cd', 5, 'y'),
	  (3, 'x@y', '', '123456', '          ', 'abcde', NULL, ''),
	  (4, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
	SELECT querygate.save_query('contacts',
	  'SELECT id, email, dsn, card, code, tag, pin, nick FROM ma_contacts ORDER BY id');
});
$qg->role('ma_reader', select => ['ma_contacts']);
my $key = $qg->access(policy => 'ma', run_as => 'ma_reader', queries => ['contacts'],
	setup => q{
		SELECT querygate.mask('ma', 'ma_contacts.email', 'mask_email', force => true);
		SELECT querygate.mask('ma', 'ma_contacts.dsn', 'mask', force => true);
		SELECT querygate.mask('ma', 'ma_contacts.card', 'partial(2,4)', force => true);
		SELECT querygate.mask('ma', 'ma_contacts.code', 'partial(1,2)', force => true);
		SELECT querygate.mask('ma', 'ma_contacts.tag', 'partial(2,2)', force => true);
		SELECT querygate.mask('ma', 'ma_contacts.pin', 'partial(1,1)', force => true);
		-- Two rules on one column: the stricter (mask) wins over partial.
		SELECT querygate.mask('ma', 'ma_contacts.nick', 'partial(3,3)', force => true);
		SELECT querygate.mask('ma', '*.nick', 'mask', force => true);
	});
$qg->adhoc_twin('ma', tables => [qw(ma_contacts ma_homes)]);

my $want = [
	{ id => 1, email => 'j***@example.com', dsn => 'p***', card => '41***1111', code => 'A***12',
	  tag => 'hé***ld', pin => undef, nick => 'x***' },
	{ id => 2, email => 'a***', dsn => 'o***', card => '***', code => 'A***IJ', tag => 'ab***cd',
	  pin => undef, nick => 'y***' },
	{ id => 3, email => 'x***', dsn => '***', card => '***', code => '***', tag => 'ab***de', pin => undef,
	  nick => '***' },
	{ id => 4, email => undef, dsn => undef, card => undef, code => undef, tag => undef, pin => undef,
	  nick => undef },
];
for my $res ($qg->get_both('/q/contacts', key => $key))
{
	$qg->expect_rows($res, $want, 'JSON');
	my @got = @{ ref $res->{json} eq 'ARRAY' ? $res->{json} : [] };
	my $is = sub { my ($got, $want, $name) = @_; is($got, $want, on_path($res, $name)); };
	$is->($got[0]{dsn}, 'p***', 'mask: a connection string with a password shows neither host nor password');
	$is->($got[1]{email}, 'a***', 'mask_email: text with an @ that is no e-mail address shows no part after it');
	$is->($got[0]{card}, '41***1111', 'partial(2,4): a card number keeps its ends');
	$is->($got[1]{card}, '***', 'partial(2,4): five characters, nothing would be hidden: *** alone');
	$is->($got[0]{code}, 'A***12', "partial(1,2): char(10) 'AB12' is four characters, its padding not shown");
	$is->($got[2]{code}, '***', 'partial(1,2): a blank char(10) is *** alone');
	$is->($got[1]{code}, 'A***IJ', 'partial(1,2): a char(10) filled to its length');
	$is->($got[0]{tag}, 'hé***ld', 'partial(2,2): characters, not bytes, are counted');
	$is->($got[1]{tag}, 'ab***cd', 'partial(2,2): a three-byte character in the middle is hidden whole');
}

# The same in CSV and TSV.
my @cols = qw(id email dsn card code tag pin nick);
for my $res ($qg->get_both('/q/contacts?format=csv', key => $key))
{
	is_deeply(parse_answer('csv', $res->{content}),
		[ \@cols, map { my $r = $_; [ map { defined $r->{$_} ? "$r->{$_}" : '' } @cols ] } @$want ],
		on_path($res, 'CSV: the same values, NULL empty'));
}
for my $res ($qg->get_both('/q/contacts?format=tsv', key => $key))
{
	my $tsv = parse_answer('tsv', $res->{content});
	is_deeply([ @$tsv[ 1 .. 4 ] ], [ map { my $r = $_; [ map { defined $r->{$_} ? "$r->{$_}" : undef } @cols ] } @$want ],
		on_path($res, 'TSV: the same values, NULL as \\N'));
}

# What the caller is told each column shows.
my $catalog = $qg->get('/catalog', key => $key)->{json};
my ($entry) = grep { $_->{name} eq 'contacts' } @{ $catalog->{queries} // [] };
is_deeply([ map { "$_->{name}:" . ($_->{mask} // '-') } @{ $entry->{columns} // [] } ],
	[ 'id:-', 'email:mask_email', 'dsn:mask', 'card:partial(2,4)', 'code:partial(1,2)', 'tag:partial(2,2)',
	  'pin:partial(1,1)', 'nick:mask' ],
	'/catalog names each column\'s action, partial with its counts');
my $row = $qg->get('/openapi.json', key => $key)->{json}{components}{schemas}{'contacts.row'}{properties} // {};
like($row->{card}{description} // '', qr/first 2 and last 4 characters/, 'OpenAPI: partial says what it keeps');
like($row->{email}{description} // '', qr/\@domain/, 'OpenAPI: mask_email says it keeps a domain');
is_deeply($row->{pin}{type}, 'null', 'OpenAPI: partial of a number is null');

# A field of a masked composite column is not the column: refused (the mask is the whole value's;
# its first character would be the field's), and the whole value is served masked.
$qg->sql(q{
	CREATE TYPE ma_addr AS (street text, zip text);
	CREATE TABLE ma_homes (id int PRIMARY KEY, addr ma_addr);
	INSERT INTO ma_homes VALUES (1, ROW('1 Main St', '90210'));
	GRANT SELECT ON ma_homes TO ma_reader;
	SELECT querygate.save_query('home_zip', 'SELECT id, (addr).zip AS zip FROM ma_homes');
	SELECT querygate.save_query('home', 'SELECT id, addr FROM ma_homes');
});
$qg->access(policy => 'ma', queries => [qw(home_zip home)], key => undef);
$qg->expect_rows($_, [ { id => 1, zip => '90210' } ], 'a field of a composite before its column is masked')
  for $qg->get_both('/q/home_zip', key => $key);
$qg->sql(q{SELECT querygate.mask('ma', 'ma_homes.addr', 'mask', force => true)});
$qg->expect_error($_, 403, 'mask_expression', 'a field of a masked composite column', names => qr/a field of a composite value/)
  for $qg->get_both('/q/home_zip', key => $key);
$qg->expect_rows($_, [ { id => 1, addr => undef } ],
	'the masked composite column itself: null, as mask makes any value that is not text')
  for $qg->get_both('/q/home', key => $key);

done_testing();
