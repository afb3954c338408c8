"""`ctxview proxy`: a local HTTP proxy between an agent and its model API that forwards every
request as it came and records it, with its reassembled answer, into the store.

One module per job: `protocols` (which API a request speaks, its parts), `sse` (server-sent
events parsed as they stream), `answers` (each protocol's answer reassembled), `keying` (the
session a request belongs to), `headers` (what is forwarded, what is never kept), `record`
(a request and its answer as the rows the store shares), `recorder` (writing them off the
request's path), `server` (listening and forwarding).
"""
