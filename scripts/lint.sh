#!/usr/bin/env bash
# Static checks that need no build, run first by scripts/test.sh (a second or two): curl's banned-function
# list as calls in product code (common compiler store tuner server; not tests/ or web/), and, once the
# tree has been reformatted and `.clang-format-enforced` exists at the repository root, `clang-format
# --dry-run -Werror` over the same files. Comments and string literals are blanked before the search, so
# that "it gets (the pool)" in a comment is not a call. Exit 0 clean, 1 on a finding (each printed as
# file:line: text), 2 when a tool it needs is missing.
# Usage: scripts/lint.sh [ROOT] (default: the repository this script is in).
set -euo pipefail
root=${1:-"$(cd "$(dirname "$0")/.." && pwd)"}
cd "$root"
product_dirs=()
for d in common compiler store tuner server; do [[ -d $d ]] && product_dirs+=("$d"); done
mapfile -t files < <(find "${product_dirs[@]}" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cc' \
  -o -name '*.cpp' -o -name '*.cu' \) | LC_ALL=C sort)
rc=0

# perl reads each file whole, blanks comments, string and character literals (newlines kept, so that line
# numbers hold), and prints every line that still calls a banned function.
if ! perl -e '
  my $bad = qr/\b(sprintf|strcpy|strcat|strtok|atoi|gets)\s*\(/;
  my $hits = 0;
  for my $f (@ARGV) {
    open(my $fh, "<", $f) or die "lint.sh: $f: $!\n";
    local $/;
    my $src = <$fh>;
    my $orig = $src;
    $src =~ s{(/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|\x27(?:\\.|[^\x27\\\n])*\x27)}
             {my $m = $1; $m =~ s/[^\n]/ /g; $m}gse;
    my @lines = split /\n/, $src, -1;
    my @orig = split /\n/, $orig, -1;
    for my $i (0 .. $#lines) {
      next unless $lines[$i] =~ $bad;
      my $fn = $1;
      my $t = $orig[$i];
      $t =~ s/^\s+//;
      print "$f:", $i + 1, ": banned function $fn(): $t\n";
      $hits++;
    }
  }
  exit($hits ? 1 : 0);
' "${files[@]}"; then
  echo "lint.sh: banned functions (sprintf strcpy strcat strtok atoi gets) called above; use snprintf," \
    "memcpy with a checked length, th_buf, strtok_r or strtol" >&2
  rc=1
fi

if [[ -f .clang-format-enforced ]]; then
  if ! command -v clang-format >/dev/null; then
    echo "lint.sh: .clang-format-enforced exists but clang-format is not installed" >&2
    exit 2
  fi
  # in batches over every core: the whole tree is some 200 files
  if ! printf '%s\0' "${files[@]}" | xargs -0 -P "$(nproc)" -n 16 clang-format --dry-run -Werror; then
    echo "lint.sh: the files above differ from clang-format's output (.clang-format); run" \
      "clang-format -i on them" >&2
    rc=1
  fi
fi
exit "$rc"
