#!/usr/bin/env bash
# What ppa writes, and what it reads back from its own folders (docs/safety.md): outputs never follow links (the
# log, the folder's lock, --out files), one file-mode rule (0666/0777 less the umask), a lock's holder printed with
# its control bytes escaped, ppa init interrupted leaves no temporary folder, a resume rewrites the log by rename
# and keeps lines of any length, only ppa's own partial saves are deleted, and a reference cache in --out that the
# run did not write is refused unless named. Usage: tests/test_outputs.sh PPA_BINARY.
ppa=$(realpath "${1:-./ppa}")
NAME=test_outputs
. "$(dirname "$0")/lib.sh"
cd "$tmp" || exit 1
tiny_model_files "$tmp"
"$ppa" init --config config.json --tokenizer tokenizer.json --out m --seed 7 --init-std 0.3 > /dev/null
letter_lists > lists.jsonl
T=(--model m --data lists.jsonl --template none --list-size 4 --batch-size 4 --lr 0.02 --warmup-ratio 0 --max-steps 4 --seed 3)
echo "the victim's own text" > victim
cp victim victim.orig
has() { grep -qF -- "$2" "$1"; }

# -- links in an output's place: refused naming the link, the target untouched
mkdir o1 && ln -s "$tmp/victim" o1/train_log.jsonl
"$ppa" train "${T[@]}" --out o1 > /dev/null 2> err; st=$?
expect "a link as train_log.jsonl: refused (exit 2)" test $st -eq 2
expect "... naming it" has err "o1/train_log.jsonl: is a symbolic link: ppa never writes through a link; remove it"
expect "... the link's target untouched" cmp -s victim victim.orig
mkdir o2 && ln -s "$tmp/victim" o2/.ppa.lock
"$ppa" train "${T[@]}" --out o2 > /dev/null 2> err; st=$?
expect "a link as the folder's lock: refused (exit 2)" test $st -eq 2
expect "... naming it" has err "the folder's lock o2/.ppa.lock is a symbolic link: ppa never writes through a link"
expect "... the link's target untouched" cmp -s victim victim.orig
ln -s "$tmp/victim" g.safetensors
"$ppa" grad --model m --data lists.jsonl --template none --objective ppa --beta 0.1 --out g.safetensors > /dev/null 2> err
st=$?
expect "grad --out over a link: written (exit 0)" test $st -eq 0
expect "... as a new file in the link's place (a rename replaces the link)" sh -c "test ! -L g.safetensors && test -s g.safetensors"
expect "... the link's target untouched" cmp -s victim victim.orig

# -- the lock's holder, as the file says it, with its control bytes escaped
mkdir o3 && printf 'ppa train (pid 1)\033]0;owned\007\033[2J\n' > o3/.ppa.lock
flock o3/.ppa.lock sleep 30 &
holder=$!
for _ in $(seq 100); do flock -n o3/.ppa.lock true 2> /dev/null || break; sleep 0.05; done
"$ppa" train "${T[@]}" --out o3 > /dev/null 2> err; st=$?
kill $holder 2> /dev/null; wait $holder 2> /dev/null
expect "a folder in use: refused (exit 2)" test $st -eq 2
expect "... the holder's bytes escaped" has err 'is in use by ppa train (pid 1)\x1b]0;owned\x07\x1b[2J (it holds'
no_byte() { ! grep -q "$1" err; }
expect "... no ESC byte printed" no_byte $'\033'
expect "... no BEL byte printed" no_byte $'\a'

# -- one file-mode rule: every output 0666 and every folder 0777, less the umask (config.json too)
for mask in 077 022; do
  (umask $mask && "$ppa" init --config config.json --tokenizer tokenizer.json --out "u$mask" --seed 7 > /dev/null 2>&1)
  (umask $mask && "$ppa" train "${T[@]}" --save-every 2 --out "t$mask" > /dev/null 2>&1)
  want_f=$(printf '%o' $((0666 & ~0$mask))) want_d=$(printf '%o' $((0777 & ~0$mask)))
  modes=$(find "u$mask" "t$mask" -type f ! -name .ppa.lock -printf '%m\n' | sort -u | tr '\n' ' ')
  expect "umask $mask: every file $want_f (found: $modes)" test "$modes" = "$want_f "
  dmodes=$(find "u$mask" "t$mask" -type d -printf '%m\n' | sort -u | tr '\n' ' ')
  expect "umask $mask: every folder $want_d (found: $dmodes)" test "$dmodes" = "$want_d "
  expect "umask $mask: config.json among them" test "$(stat -c %a "u$mask/config.json")" = "$want_f"
done

# -- ppa init interrupted: its temporary folder goes with it (SIGTERM: a script's background job ignores SIGINT,
# and ppa leaves an ignored signal ignored)
sed 's/"hidden_size": 32/"hidden_size": 512/; s/"intermediate_size": 64/"intermediate_size": 1536/; s/"num_hidden_layers": 2/"num_hidden_layers": 8/' config.json > big.json
"$ppa" init --config big.json --tokenizer tokenizer.json --out big --seed 7 > /dev/null 2>&1 &
pid=$!
seen=0
for _ in $(seq 4000); do
  if compgen -G "big.tmp.*" > /dev/null; then seen=1; break; fi
  kill -0 $pid 2> /dev/null || break
  sleep 0.005
done
kill -TERM $pid 2> /dev/null
wait $pid; st=$?
if [ $seen = 1 ]; then
  expect "init interrupted by SIGTERM: ends as the signal does (status 143, got $st)" test $st -eq 143
  # the signal may land after the folder's rename, before the exit: then the whole folder stands, never a part
  expect "... leaving no big.tmp.*, and no big or a whole one" bash -c '! compgen -G "big.tmp.*" > /dev/null &&
    { test ! -e big || { test -s big/config.json && test -s big/model.safetensors; }; }'
else
  bad "init of the large model ended before its temporary folder was seen (status $st)"
fi

# -- a resume: the log rewritten by rename (a new file, never truncated in place), lines of any length kept whole
"$ppa" train "${T[@]}" --save-every 2 --out r > /dev/null 2>&1
expect "a run with a checkpoint at step 2" test -d r/checkpoint-2
long=$(head -c 100000 /dev/zero | tr '\0' x)
{ head -2 r/train_log.jsonl; printf '{"step": 2, "note": "%s"}\n' "$long"; tail -n +3 r/train_log.jsonl; } > log.new
cp log.new r/train_log.jsonl
ino=$(stat -c %i r/train_log.jsonl)
rm -rf r/model.safetensors r/config.json # the run's final model: a resume writes it again
mkdir r/checkpoint-2.partial-notes r/checkpoint-x.partial r/checkpoint-9.partial r/checkpoint-9.partial.tmp.77 \
  r/checkpoint-9.partial.tmp.x
echo mine > r/checkpoint-2.partial-notes/keep
"$ppa" train "${T[@]}" --save-every 2 --out r --resume r/checkpoint-2 > /dev/null 2> err; st=$?
expect "the resume exits 0 ($(tail -1 err))" test $st -eq 0
expect "... the log is a new file (renamed into place, not truncated in place)" test "$(stat -c %i r/train_log.jsonl)" != "$ino"
expect "... the 100 KB line of step 2 kept whole" test "$(grep -c "$long" r/train_log.jsonl)" -eq 1
expect "... steps 1, 2, 2, then 3 and 4" test "$(grep -o '^{"step": [0-9]*' r/train_log.jsonl | tr -d -c '0-9\n' | tr '\n' ' ')" = "1 2 2 3 4 "
expect "a user's folder named like a partial save is kept" test -f r/checkpoint-2.partial-notes/keep
expect "... and checkpoint-x.partial too" test -d r/checkpoint-x.partial
expect "ppa's own stale partial saves (checkpoint-9.partial, its .tmp.77) are removed" test ! -e r/checkpoint-9.partial -a ! -e r/checkpoint-9.partial.tmp.77
expect "... not checkpoint-9.partial.tmp.x" test -d r/checkpoint-9.partial.tmp.x

# -- a reference cache in a fresh --out: not this run's, refused unless named; named, it is checked and used
mkdir c && cp r/reference.cache c/
"$ppa" train "${T[@]}" --out c > /dev/null 2> err; st=$?
expect "a reference.cache planted in a fresh --out: refused (exit 2)" test $st -eq 2
expect "... saying how to use it" has err "c/reference.cache is in --out, but this run did not write it (it is not resuming): delete it, or use it with --ref-cache c/reference.cache"
"$ppa" train "${T[@]}" --out c --ref-cache c/reference.cache > /dev/null 2> err; st=$?
expect "... named with --ref-cache: checked and used (exit 0: $(tail -1 err))" test $st -eq 0
expect "... and left as it was (read, not written again)" cmp -s c/reference.cache r/reference.cache
report
