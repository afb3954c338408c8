"""`ctxview proxy`: a local HTTP proxy between an agent and its model API that forwards every
request as it came and records it, with its reassembled answer, into the store.

One module per job: `protocols` (which API a request speaks, its parts), `sse` (server-sent
events parsed as they stream), `answers` (each protocol's answer reassembled), `keying` (the
session a request belongs to), `headers` (what is forwarded, what is never kept), `record`
(a request and its answer as the rows the store shares), `spool` (each exchange on disk until
it is stored), `recorder` (the proxy's side: spooling, and supervising the recorder process),
`recorder_process` (parsing and storing, in a process of its own), `server` (listening and
forwarding).
"""
