# The README as a tested tutorial, continued by the documents in docs/: on a fresh server loaded as
# `make run` loads its demo (pgbench's tables at scale 1 and scripts/demo.sql), every fenced block
# that says it runs is run, README.md's first, in its order, then each docs/*.md's, in the order the
# README first links to them (then any it does not link, by name), on the same server, so that a
# document's examples go on from what the README's made. What the text shows is what it gives:
# - ```sql: run with psql, stopping at the first error; a ```json block right after it is the
#   result of its last statement, compared as JSON;
# - ```console: each "$ " line (with "\" continuations) run by one bash for the block (so a
#   variable set by one command is there for the next), with KEY set to the demo's key and the
#   README's http://127.0.0.1:8080 made this server's; the lines after it, up to the next "$ ",
#   are its output, compared exactly (CSV's CRLF read as LF, and an answer's last line ended as a
#   terminal shows it);
# - any other block, or one whose info string has a second word ("```sql example"), is shown, not
#   run; a block with no info string at all fails: every block says what it is.
# Every document in docs/ must be linked from the README, and at least as many blocks must run as
# the README's tutorial had before its reference sections moved to docs/ (12 SQL blocks, 7
# commands, 1 JSON result), so that moving a block never stops it from running.
use strict;
use warnings;
use FindBin;
use IPC::Run;
use JSON::PP;
use PostgreSQL::Test::Utils;
use Test::More;
use QuerygateTest;

my $root = "$FindBin::Bin/../..";
my $qg = QuerygateTest->start(name => 'readme');
my $node = $qg->node;
$node->command_ok([ 'pgbench', '-i', '-s', '1', '-q', '-h', $node->host, '-p', $node->port, 'postgres' ],
	'pgbench tables at scale 1, as make run loads them');

sub psql_file
{
	my ($sql) = @_;
	my ($out, $err) = ('', '');
	IPC::Run::run([ 'psql', '-h', $node->host, '-p', $node->port, '-d', 'postgres', '-qAtX', '-v', 'ON_ERROR_STOP=1' ],
		'<', \$sql, '>', \$out, '2>', \$err);
	return ($? >> 8, $out, $err);
}

my ($rc, $out, $err) = psql_file(slurp_file("$root/scripts/demo.sql"));
is($rc, 0, 'the demo\'s catalog (scripts/demo.sql)') or diag($err);
my ($key) = (split /\n/, $out)[-1];
like($key // '', qr/^qg_[A-Za-z0-9_-]{43}$/, 'its key');
my $base = 'http://127.0.0.1:' . $qg->port;
my $cwd = PostgreSQL::Test::Utils::tempdir(); # where the commands write their files

# A document's fenced blocks, in order: [line, info, text].
sub fenced_blocks
{
	my ($file) = @_;
	my @blocks;
	my @lines = split /\n/, slurp_file("$root/$file"), -1;
	# A fence may be indented, in a list item; its lines lose that indentation.
	my ($in, $start, $info, $indent, @body);
	for my $i (0 .. $#lines)
	{
		if ($lines[$i] =~ /^( *)```(.*)$/ && (!$in || $1 eq $indent))
		{
			if ($in)
			{
				push @blocks, [ $start + 1, $info, join("\n", @body) ];
				($in, @body) = (0);
			}
			else
			{
				($in, $start, $indent, $info) = (1, $i, $1, $2);
			}
			next;
		}
		push @body, substr($lines[$i], 0, length $indent) eq $indent ? substr($lines[$i], length $indent) : $lines[$i]
		  if $in;
	}
	return @blocks;
}

# The documents, in the order they run: the README, then docs/ as the README first links to them.
my @documents = ('README.md');
{
	my %seen;
	my @linked = grep { !$seen{$_}++ } slurp_file("$root/README.md") =~ m{\]\((docs/[^)#\s]+\.md)}g;
	my @present = map { "docs/" . ($_ =~ s{.*/}{}r) } sort glob("$root/docs/*.md");
	my %present = map { $_ => 1 } @present;
	ok($present{$_}, "README.md links to $_, which exists") for @linked;
	ok($seen{$_}, "the README links to $_") for @present;
	push @documents, grep { $present{$_} } @linked;
	push @documents, grep { !$seen{$_} } @present;
}

my $blocks_read = 0;
my $sql_ran = 0;
my $json_compared = 0;
my $commands = 0;
for my $file (@documents)
{
	my @blocks = fenced_blocks($file);
	$blocks_read += @blocks;
	run_blocks($file, @blocks);
}
cmp_ok($blocks_read, '>', 20, "$blocks_read blocks read in " . scalar(@documents) . ' documents');
cmp_ok($sql_ran, '>=', 12, "$sql_ran SQL blocks ran");
cmp_ok($json_compared, '>=', 1, "$json_compared JSON results compared");
cmp_ok($commands, '>=', 7, "$commands commands ran");

done_testing();

# Runs one document's blocks, as the header says.
sub run_blocks
{
	my ($file, @blocks) = @_;
	for my $n (0 .. $#blocks)
	{
		my ($line, $info, $text) = @{ $blocks[$n] };
		if ($info eq '')
		{
			fail("$file line $line: a block without an info string (say what it is: sql, console, sh, text...)");
			next;
		}
		my ($lang, $mark) = split ' ', $info;
		next if defined $mark; # shown, not run
		if ($lang eq 'sql')
		{
			my ($rc, $out, $err) = psql_file($text);
			$sql_ran++;
			is($rc, 0, "$file line $line: its SQL runs") or diag("$err\n$text");
			my $next = $blocks[ $n + 1 ];
			if ($next && $next->[1] eq 'json')
			{
				my @results = grep { length } split /\n/, $out;
				my $got = eval { decode_json($results[-1] // '') };
				my $want = eval { decode_json($next->[2]) };
				$json_compared++;
				ok(defined $want, "$file line $next->[0]: the JSON shown is JSON") or diag($@);
				is_deeply($got, $want, "$file line $next->[0]: what the SQL above it answers")
				  or diag("it answers: " . ($results[-1] // '(nothing)'));
			}
		}
		elsif ($lang eq 'console')
		{
			run_console($file, $line, $text);
		}
	}
}

# A console block: [line, command, expected output] for each "$ " line, run by one shell.
sub run_console
{
	my ($file, $line, $text) = @_;
	my @steps;
	my @lines = split /\n/, $text;
	my $i = 0;
	while ($i < @lines)
	{
		if ($lines[$i] !~ /^\$ /)
		{
			fail("$file line " . ($line + 1 + $i) . ": a console block's lines start with \"\$ \" or follow one");
			$i++;
			next;
		}
		my $at = $line + 1 + $i;
		(my $command = $lines[$i++]) =~ s/^\$ //;
		while ($command =~ /\\$/ && $i < @lines)
		{
			$command .= "\n" . $lines[$i++];
		}
		my @want;
		push @want, $lines[$i++] while $i < @lines && $lines[$i] !~ /^\$ /;
		push @steps, [ $at, $command, join('', map { "$_\n" } @want) ];
	}
	# One shell for the block: each command, then a mark with its exit status.
	my $script = join('', map { "$steps[$_][1]\necho \"<<<step $_ \$?>>>\"\n" } 0 .. $#steps);
	$script =~ s{http://127\.0\.0\.1:8080}{$base}g;
	my ($got, $err) = ('', '');
	IPC::Run::run([ 'bash', '-c', $script ], '>', \$got, '2>', \$err,
		init => sub { chdir $cwd or die "chdir: $!"; $ENV{KEY} = $key });
	$got =~ s/\r\n/\n/g;
	for my $s (0 .. $#steps)
	{
		my ($at, $command, $want) = @{ $steps[$s] };
		my ($out, $status) = $got =~ /\A(.*?)<<<step $s (\d+)>>>\n/s ? ($1, $2) : ('', 'none');
		$got =~ s/\A.*?<<<step $s \d+>>>\n//s;
		$out .= "\n" if length $out && $out !~ /\n\z/; # an answer without a final newline
		$commands++;
		is($status, 0, "$file line $at: $command") or diag($err);
		is($out, $want, "$file line $at: prints what it shows");
	}
}
