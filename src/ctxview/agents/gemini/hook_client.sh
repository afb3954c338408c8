# ctxview's Gemini CLI command hook in bash builtins only, so a tool call starts no process:
# Gemini runs every command hook in `bash -c`, and the hook's command sources this file
# (`. .../hook_client.sh PYTHON STORE`, written by `ctxview install gemini`). It POSTs the hook
# input to the store's resident engine over http on 127.0.0.1 (hook_http.py), with the secret of
# `<store>.hook-endpoint.json` (read here, never on a command line), and prints the answer as the
# Python client (hook_client.py) would: nothing for none.
#
# On any trouble before the engine took the request (no endpoint file or a strange one, the
# engine down, its port refusing, an answer other than 200: a wrong secret) the Python client
# runs instead, with the hook input: it starts the engine when none runs, answers over the Unix
# socket and records any failure for `ctxview doctor`. After the engine took it (an answer cut
# short, or none within the budget), asking again could store the call twice: the Python client
# only records the failure, and Gemini keeps its own output.

LC_ALL=C # ${#body} counts bytes, and patterns match bytes
trap '' PIPE # an engine that closes early fails a write here, rather than killing the hook

_ctxview_py=$1 _ctxview_store=$2

_ctxview_python() { # the Python client, with any extra arguments; it is the hook from here on
	exec "$_ctxview_py" -I -S -c \
		'import sys;sys.path.insert(0,sys.argv.pop(1));import hook_client as h;h.main(sys.argv[1:])' \
		"${BASH_SOURCE[0]%/*/*}" gemini --store "$_ctxview_store" "$@"
}

# `read -N` and `{fd}<>` came with bash 4.1 (macOS's /bin/bash is 3.2).
((BASH_VERSINFO * 100 + BASH_VERSINFO[1] >= 401)) && [[ -z $CTXVIEW_HOOK_FAIL ]] || _ctxview_python

# The endpoint as endpoint.ensure writes it; a link, a FIFO or a device is not read (a FIFO
# would block), nor more than a small file's bytes; anything else is the Python client's.
_ctxview_ep=$_ctxview_store.hook-endpoint.json
[[ -f $_ctxview_ep && ! -L $_ctxview_ep ]] || _ctxview_python
read -r -t 1 -N 512 _ctxview_line <"$_ctxview_ep"
# (Bounds as numbers: a regular expression's `{32,256}` takes bash 0.5 ms to compile.)
_ctxview_re='^\{"port": ([1-9][0-9]*), "secret": "([0-9a-f]+)"\}$'
[[ $_ctxview_line =~ $_ctxview_re ]] && _ctxview_port=${BASH_REMATCH[1]} &&
	_ctxview_secret=${BASH_REMATCH[2]} && ((${#_ctxview_port} <= 5 && _ctxview_port >= 1024 &&
	_ctxview_port <= 65535 && ${#_ctxview_secret} >= 32 && ${#_ctxview_secret} <= 256)) ||
	_ctxview_python

{ exec {_ctxview_fd}<>"/dev/tcp/127.0.0.1/$_ctxview_port"; } 2>/dev/null || _ctxview_python

# The hook input to EOF, in large reads (`-N`; `-d ''` reads a pipe a byte at a time).
read -r -N 1073741824 _ctxview_body
# A body larger than the socket takes in unread could block the write on an engine that has
# stopped: a watchdog (two forks, only then) interrupts it after the budget.
_ctxview_dog= _ctxview_late=
if ((${#_ctxview_body} > 65536)); then
	trap _ctxview_late=1 USR1
	# Again every 0.1 s: a write blocked after a partial one goes on with the rest when signalled.
	{ exec {_ctxview_w}<> <(:); read -r -t 1.8 -u "$_ctxview_w"
		while kill -USR1 $$; do read -r -t 0.1 -u "$_ctxview_w"; done; } 2>/dev/null &
	_ctxview_dog=$!
fi
printf 'POST /hook/gemini HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: %d\r\nX-Ctxview-Secret: %s\r\nConnection: close\r\n\r\n%s' \
	"${#_ctxview_body}" "$_ctxview_secret" "$_ctxview_body" >&"$_ctxview_fd" 2>/dev/null
_ctxview_sent=$?
[[ -z $_ctxview_dog ]] || kill "$_ctxview_dog" 2>/dev/null # before any exec: it signals $$
if [[ -n $_ctxview_late ]]; then # its end may have gone as the budget ran out: not asked again
	_ctxview_python --failed="the engine did not take the request over http in 1.8 s" \
		<<<"$_ctxview_body"
elif ((_ctxview_sent)); then
	_ctxview_python <<<"$_ctxview_body" # the engine closed early: it took nothing
fi

# The answer, to EOF (the engine closes after it). Its first byte within the client's own 2 s
# budget; the rest without `-t`, which costs two system calls a byte: the engine writes the
# answer in one piece (hook_http.py), so once it begins, it comes. A reset connection is told
# below by what was read (bash's own "read error" would be the hook's stderr, which Gemini shows).
_ctxview_resp= _ctxview_rest=
read -r -t 1.8 -N 1 -u "$_ctxview_fd" _ctxview_resp 2>/dev/null
_ctxview_timed=$? # above 128: the budget ran out
((_ctxview_timed)) || read -r -N 1073741824 -u "$_ctxview_fd" _ctxview_rest 2>/dev/null
_ctxview_resp+=$_ctxview_rest
_ctxview_head=${_ctxview_resp%%$'\r\n\r\n'*}
_ctxview_answer=${_ctxview_resp:${#_ctxview_head}+4}
if ((_ctxview_timed > 128)); then
	_ctxview_python --failed="the engine took the request over http and did not answer in 1.8 s" \
		<<<"$_ctxview_body"
elif [[ $_ctxview_head != 'HTTP/1.1 '* ]]; then
	_ctxview_python --failed="the engine took the request over http and closed it unanswered" \
		<<<"$_ctxview_body"
elif [[ $_ctxview_head != 'HTTP/1.1 200 '* ]]; then
	_ctxview_python <<<"$_ctxview_body" # not taken (a wrong secret: 403)
elif ! [[ $_ctxview_head =~ $'\r\n'Content-Length:\ ([0-9]+) ]] ||
	((${#_ctxview_resp} < ${#_ctxview_head} + 4 || ${#_ctxview_answer} != BASH_REMATCH[1])); then
	_ctxview_python --failed="the engine's answer over http was cut short" <<<"$_ctxview_body"
fi
[[ $_ctxview_answer == '{}' ]] || printf %s "$_ctxview_answer" # `{}`: the engine has none
exit 0
