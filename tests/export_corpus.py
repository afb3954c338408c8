"""A corpus for measuring redaction's precision: documents of the kinds a coding session holds
that look a little like secrets and are not (identifiers, test names, digests, uuids, paths,
base64 of ordinary things, URLs, git hashes, npm integrity values, docker digests, CSS, minified
JavaScript), and secrets of every kind planted in the contexts they turn up in. Generated from
a seed, so the same corpus every run; nothing in it is a real secret.

`ordinary()` gives category -> documents: every redaction in them is a false positive.
`planted()` gives (kind, text, secret): each secret must be gone from its redacted text.
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import uuid

WORDS = """
account action active adapter address agent alert allow api app apply array asset async audio
auth author auto backend balance base batch bean before binary block body boolean border bound
branch browser buffer build bundle button cache calendar call callback cancel canvas card cart
catalog cell change channel chart check checkout child class clean client clock close cloud code
collection color column command comment commit common compact compare compile component config
connect connection console constant consumer container content context control controller copy
core count counter create credit cursor custom customer dashboard data database date debug
decimal decode default delete delivery depth describe descriptor design detail device dialog
diff direct directory disable discount display document domain download draft drag driver
dropdown dump duration dynamic edge edit editor element email empty enable encode end endpoint
engine entity entry environment error event exception exchange expand export expression factory
feature feedback fetch field file filter finder first flag float flow focus folder font footer
form format forward frame function gateway generate generic global graph grid group guard
handle handler hash header health height helper hidden history hook host hover http icon image
import index info init inline input insert instance integer interface internal invoice item
job json kernel key label language large last layer layout lazy length level library limit line
link list listener load loader local locale lock log logger login lookup main manager map
margin mark market master match matrix media member memory menu merge message meta method
metric middleware migration mobile modal mode model module monitor mount mouse move multi name
native network node notification null number object observer offset open operation option
order origin output overlay owner package page panel parent parse parser partial password path
pattern payload payment pending permission picker pipeline pixel plan player plugin point
policy pool popup port position post preview price primary print priority process product
profile progress project promise property provider proxy public publish query queue radio
range reader record redirect reduce reference refresh region register registry release remote
remove render replace reply report repository request reset resolve resource response rest
result retry return review role root route router row rule runner runtime sample save scale
schema scope screen script scroll search section secure select selector sender sequence server
service session setting setup shadow shape share sheet shell shipping short signal simple size
slider slot snapshot socket sort source span spec split stack stage state static status step
storage store stream string style submit subscription summary support switch sync system table
tab tag target task template tenant test text theme thread time timer title toggle token tool
tooltip total trace track transaction transform tree trigger type update upload user util
valid validator value variable vector version view viewer visible wallet watch web widget
width window worker workflow wrapper write writer zone
""".split()  # noqa: SIM905  (460 quoted words would be harder to read)
ACRONYMS = ["HTTP", "URL", "API", "JSON", "XML", "SQL", "UI", "DB", "IO", "ID", "UUID", "CSS",
            "DOM", "AWS", "S3", "OAuth2", "V2", "V3", "Http2", "Base64", "UTF8", "X509", "2D",
            "3D", "Auth0", "GraphQL", "Grpc", "TLS", "SSH", "JWT", "CSV", "PDF", "MD5"]  # fmt: skip
B64 = string.ascii_letters + string.digits + "+/"
ALNUM = string.ascii_letters + string.digits


def _words(rng: random.Random, low: int, high: int) -> list[str]:
    return [rng.choice(WORDS) for _ in range(rng.randint(low, high))]


def camel(rng: random.Random, low: int = 2, high: int = 6, upper: bool | None = None) -> str:
    parts = [w.capitalize() for w in _words(rng, low, high)]
    if rng.random() < 0.5:
        parts.insert(rng.randrange(len(parts) + 1), rng.choice(ACRONYMS))
    name = "".join(parts)
    if upper is False or (upper is None and rng.random() < 0.5):
        name = name[0].lower() + name[1:]
    return name


def snake(rng: random.Random, low: int = 2, high: int = 5) -> str:
    parts = _words(rng, low, high)
    if rng.random() < 0.3:
        parts.append(str(rng.randint(1, 99)))
    return "_".join(parts)


def hexs(rng: random.Random, n: int) -> str:
    return "".join(rng.choice("0123456789abcdef") for _ in range(n))


def rand(rng: random.Random, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def sentence(rng: random.Random) -> str:
    return " ".join(_words(rng, 4, 12)).capitalize() + "."


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _wrap(text: str, width: int) -> str:
    return "\n".join(text[i : i + width] for i in range(0, len(text), width))


# Ordinary documents, a generator per category.


def identifiers(rng: random.Random) -> str:
    out = []
    for _ in range(40):
        cls, method = camel(rng, 2, 5, True), camel(rng, 2, 4, False)
        pkg = ".".join(rng.choice(WORDS) for _ in range(rng.randint(2, 4)))
        out.append(rng.choice([
            f"\tat com.example.{pkg}.{cls}.{method}({cls}.java:{rng.randint(10, 900)})",
            f"class {cls}{rng.choice(['Impl', 'Factory', 'Provider', 'Handler', 'Manager'])}"
            f" extends Abstract{camel(rng, 1, 3, True)} implements {camel(rng, 2, 3, True)} {{",
            f"export const {method} = use{camel(rng, 2, 4, True)}({camel(rng, 1, 3, False)});",
            f"def {snake(rng, 3, 6)}(self, {snake(rng, 1, 2)}: {camel(rng, 2, 3, True)}) -> None:",
            f"    {camel(rng, 1, 2, False)}.{method}({snake(rng)}, {camel(rng, 2, 5, False)})",
            f"interface {cls}Props<T extends {camel(rng, 1, 3, True)}> {{ {method}: () => void }}",
            f"- (void){method}:(NS{camel(rng, 2, 4, True)} *){camel(rng, 1, 2, False)};",
            f"{snake(rng).upper()} = {rng.randint(0, 10_000)}",
        ]))  # fmt: skip
    return "\n".join(out)


def test_names(rng: random.Random) -> str:
    out = []
    for _ in range(30):
        name = "Test" + camel(rng, 1, 5, True)
        sub = rng.choice([hexs(rng, 7), f"case_{rng.randint(0, 40)}", snake(rng, 2, 5),
                          f"{rng.choice(WORDS)}_{hexs(rng, 8)}", camel(rng, 2, 4, False)])  # fmt: skip
        secs = f"{rng.random():.2f}"
        out.append(rng.choice([
            f"=== RUN   {name}/{sub}", f"--- PASS: {name}/{sub} ({secs}s)",
            f"--- FAIL: {name}/{sub} ({secs}s)", f"    --- PASS: {name}/{sub}#{rng.randint(1, 9):02d}",
            f"tests/test_{snake(rng, 1, 2)}.py::test_{snake(rng, 3, 7)}[{rng.choice(WORDS)}-{rng.randint(0, 9)}] PASSED",
            f"  ✓ {sentence(rng)[:-1]} ({rng.randint(1, 400)} ms)",
            f"ok  \tgithub.com/{rng.choice(WORDS)}/{rng.choice(WORDS)}/internal/{rng.choice(WORDS)}\t{secs}s",
            f"func {name}(t *testing.T) {{ t.Run(\"{sub}\", func(t *testing.T) {{",
        ]))  # fmt: skip
    return "\n".join(out)


def digests(rng: random.Random) -> str:
    out = []
    for _ in range(25):
        data = rng.randbytes(64)
        name = f"{rng.choice(WORDS)}-{rng.randint(0, 9)}.{rng.randint(0, 20)}.{rng.randint(0, 9)}"
        out.append(rng.choice([
            f"{hashlib.sha256(data).hexdigest()}  dist/{name}.tar.gz",
            f"github.com/{rng.choice(WORDS)}/{rng.choice(WORDS)} v1.{rng.randint(0, 30)}.0 h1:"
            f"{_b64(hashlib.sha256(data).digest())}",
            f"github.com/{rng.choice(WORDS)}/{rng.choice(WORDS)} v0.{rng.randint(0, 9)}.1/go.mod h1:"
            f"{_b64(hashlib.sha256(data).digest())}",
            f"    --hash=sha256:{hashlib.sha256(data).hexdigest()}",
            f'checksum = "{hashlib.sha256(data).hexdigest()}"',
            f"md5: {hashlib.md5(data).hexdigest()}  sha1: {hashlib.sha1(data).hexdigest()}",
            f'<script src="/js/{name}.js" integrity="sha384-'
            f'{_b64(hashlib.sha384(data).digest())}" crossorigin="anonymous"></script>',
            f"oid sha256:{hashlib.sha256(data).hexdigest()}",
            f"ETag: \"{_b64(hashlib.md5(data).digest())}\"",
        ]))  # fmt: skip
    return "\n".join(out)


def npm_integrity(rng: random.Random) -> str:
    out = []
    for _ in range(15):
        data = rng.randbytes(32)
        pkg = rng.choice(WORDS) + rng.choice(["", "-" + rng.choice(WORDS), "js"])
        ver = f"{rng.randint(0, 9)}.{rng.randint(0, 30)}.{rng.randint(0, 9)}"
        sri = "sha512-" + _b64(hashlib.sha512(data).digest())
        out.append(rng.choice([
            f'    "node_modules/{pkg}": {{\n      "version": "{ver}",\n      "resolved": '
            f'"https://registry.npmjs.org/{pkg}/-/{pkg}-{ver}.tgz",\n      "integrity": "{sri}"\n    }},',
            f'{pkg}@^{ver}:\n  version "{ver}"\n  resolved "https://registry.yarnpkg.com/{pkg}/-/'
            f'{pkg}-{ver}.tgz#{hashlib.sha1(data).hexdigest()}"\n  integrity {sri}',
            f"  /{pkg}@{ver}:\n    resolution: {{integrity: {sri}}}",
            f'"integrity": "sha1-{_b64(hashlib.sha1(data).digest())}"',
        ]))  # fmt: skip
    return "\n".join(out)


def docker_digests(rng: random.Random) -> str:
    out = []
    for _ in range(20):
        digest = hashlib.sha256(rng.randbytes(16)).hexdigest()
        image = f"{rng.choice(['ghcr.io/', 'docker.io/library/', ''])}{rng.choice(WORDS)}"
        out.append(rng.choice([
            f"docker pull {image}@sha256:{digest}",
            f"Digest: sha256:{digest}\nStatus: Downloaded newer image for {image}:latest",
            f"{image:<30} latest    {digest[:12]}   {rng.randint(2, 9)} days ago   {rng.randint(5, 900)}MB",
            f'"RepoDigests": ["{image}@sha256:{digest}"],',
            f" => [internal] load metadata for {image}:{rng.randint(1, 20)}-slim sha256:{digest}",
            f"FROM {image}:{rng.randint(1, 22)}@sha256:{digest} AS build",
        ]))  # fmt: skip
    return "\n".join(out)


def uuids(rng: random.Random) -> str:
    out = []
    for _ in range(25):
        u = uuid.UUID(bytes=rng.randbytes(16), version=4)
        out.append(rng.choice([
            f"INFO request_id={u} user={rng.choice(WORDS)} took {rng.randint(1, 900)}ms",
            f'{{"id": "{u}", "parentId": "{uuid.UUID(bytes=rng.randbytes(16))}", "type": "{rng.choice(WORDS)}"}}',
            f"~/.claude/projects/-Users-{rng.choice(WORDS)}-workspace-{rng.choice(WORDS)}/{u}.jsonl",
            f"session {u.hex} started",
            f"urn:uuid:{u}",
        ]))  # fmt: skip
    return "\n".join(out)


def paths(rng: random.Random) -> str:
    out = []
    for _ in range(30):
        user = rng.choice(WORDS)
        parts = "/".join(rng.choice([rng.choice(WORDS), camel(rng, 1, 3, True), snake(rng, 1, 3)])
                         for _ in range(rng.randint(2, 5)))  # fmt: skip
        out.append(rng.choice([
            f"/Users/{user}/workspace/{parts}.{rng.choice(['ts', 'tsx', 'py', 'go', 'rs'])}",
            f"/private/var/folders/{rand(rng, string.ascii_lowercase + string.digits, 2)}/"
            f"{rand(rng, string.ascii_lowercase + string.digits + '_', 30)}/T/pytest-of-{user}/"
            f"pytest-{rng.randint(0, 99)}/test_{snake(rng, 1, 3)}0",
            f"node_modules/.pnpm/{rng.choice(WORDS)}@{rng.randint(1, 9)}.{rng.randint(0, 9)}.0_"
            f"{hexs(rng, 26)}/node_modules/{rng.choice(WORDS)}/dist/index.js",
            f"/nix/store/{rand(rng, '0123456789abcdfghijklmnpqrsvwxyz', 32)}-{rng.choice(WORDS)}-{rng.randint(1, 3)}.{rng.randint(0, 12)}",
            "C:\\Users\\" + user + "\\AppData\\Local\\" + camel(rng, 1, 2, True) + "\\"
            + parts.replace("/", "\\"),
            f"  File \"/home/{user}/.venv/lib/python3.11/site-packages/{parts}.py\", line {rng.randint(1, 999)}, in {snake(rng)}",
            f"src/{parts}/{camel(rng, 2, 4, True)}.module.css",
            f"/home/{user}/.cache/huggingface/hub/models--{rng.choice(WORDS)}--{rng.choice(WORDS)}-base/snapshots/{hexs(rng, 40)}/config.json",
            f"/tmp/tmp{rand(rng, string.ascii_lowercase + string.digits + '_', 8)}/{snake(rng)}.log",
            f"build/static/js/main.{hexs(rng, 8)}.chunk.js",
        ]))  # fmt: skip
    return "\n".join(out)


def base64_ordinary(rng: random.Random) -> str:
    out = []
    for _ in range(15):
        text = " ".join(sentence(rng) for _ in range(rng.randint(1, 6)))
        obj = {"name": rng.choice(WORDS), "version": f"{rng.randint(0, 9)}.{rng.randint(0, 9)}",
               "items": _words(rng, 1, 5), "enabled": rng.random() < 0.5}  # fmt: skip
        png = b"\x89PNG\r\n\x1a\n" + rng.randbytes(rng.randint(40, 400))
        woff = b"wOF2" + rng.randbytes(rng.randint(60, 300))
        out.append(rng.choice([
            f"echo {_b64(text.encode())} | base64 -d",
            f"  {rng.choice(WORDS)}.json: {_b64(json.dumps(obj).encode())}",
            f"Content-Transfer-Encoding: base64\n\n{_wrap(_b64(text.encode()), 76)}",
            f'<img src="data:image/png;base64,{_b64(png)}" alt="{rng.choice(WORDS)}">',
            f"$ base64 logo.png\n{_wrap(_b64(png), 76)}",
            f"src: url(data:font/woff2;base64,{_b64(woff)}) format('woff2');",
            f"//# sourceMappingURL=data:application/json;charset=utf-8;base64,"
            f"{_b64(json.dumps({'version': 3, 'sources': [f'../src/{rng.choice(WORDS)}.ts'], 'mappings': 'AAAA,SAAS;IACP'}).encode())}",
            f"state: {_b64(json.dumps(obj).encode()).rstrip('=')}",
        ]))  # fmt: skip
    return "\n".join(out)


def urls(rng: random.Random) -> str:
    out = []
    for _ in range(30):
        org, repo = rng.choice(WORDS), rng.choice(WORDS) + rng.choice(["", "-js", "-cli", "py"])
        path = "/".join(rng.choice([rng.choice(WORDS), camel(rng, 1, 3, True)])
                        for _ in range(rng.randint(1, 4)))  # fmt: skip
        out.append(rng.choice([
            f"https://github.com/{org}/{repo}/blob/{hexs(rng, 40)}/src/{path}.ts#L{rng.randint(1, 500)}",
            f"https://github.com/{org}/{repo}/pull/{rng.randint(1, 9999)}/files",
            f"https://github.com/{org}/{repo}/commit/{hexs(rng, 40)}",
            f"https://developer.mozilla.org/en-US/docs/Web/API/{camel(rng, 1, 3, True)}/{camel(rng, 1, 2, False)}",
            f"https://stackoverflow.com/questions/{rng.randint(10**6, 10**8)}/{'-'.join(_words(rng, 3, 9))}",
            f"https://www.npmjs.com/package/@{org}/{repo}",
            f"https://{org}-{repo}.s3.amazonaws.com/{path}/{uuid.UUID(bytes=rng.randbytes(16))}.png",
            f"https://cdn.{org}.com/assets/{rng.choice(WORDS)}-{rand(rng, ALNUM, 8)}.js",
            f"http://localhost:{rng.randint(3000, 9000)}/{path}?page={rng.randint(1, 9)}&sort={rng.choice(WORDS)}",
            f"https://www.youtube.com/watch?v={rand(rng, ALNUM + '-_', 11)}",
            f"https://docs.python.org/3/library/{rng.choice(WORDS)}.html#{rng.choice(WORDS)}.{camel(rng, 1, 3, True)}",
            f"[{sentence(rng)[:-1]}](https://{org}.dev/docs/{path})",
        ]))  # fmt: skip
    return "\n".join(out)


def git_shas(rng: random.Random) -> str:
    out = []
    for _ in range(25):
        sha = hexs(rng, 40)
        out.append(rng.choice([
            f"{sha[:7]} {rng.choice(['fix', 'feat', 'chore', 'docs'])}: {sentence(rng)}",
            f"commit {sha}\nAuthor: {rng.choice(WORDS).capitalize()} <{rng.choice(WORDS)}@example.com>",
            f"Merge: {sha[:7]} {hexs(rng, 7)}",
            f"index {sha[:12]}..{hexs(rng, 12)} 100644",
            f"HEAD is now at {sha[:9]} {sentence(rng)}",
            f"+ git checkout {sha}",
        ]))  # fmt: skip
    return "\n".join(out)


def css(rng: random.Random) -> str:
    out = []
    for _ in range(25):
        name = camel(rng, 1, 3, True)
        out.append(rng.choice([
            f".{name}_{rng.choice(WORDS)}__{rand(rng, ALNUM + '-_', 5)} {{ display: flex; gap: {rng.randint(1, 24)}px; }}",
            f'<div class="flex items-center justify-between rounded-lg bg-slate-{rng.randint(1, 9)}00 px-{rng.randint(1, 8)} py-2 '
            f'hover:bg-slate-{rng.randint(1, 9)}00 dark:text-slate-{rng.randint(1, 9)}00">',
            f".css-{rand(rng, string.ascii_lowercase + string.digits, 7)}-{rng.choice(WORDS)} {{ color: #{hexs(rng, 6)}; }}",
            f"  --{'-'.join(_words(rng, 2, 4))}: rgba({rng.randint(0, 255)}, {rng.randint(0, 255)}, {rng.randint(0, 255)}, 0.{rng.randint(1, 9)});",
            f"@media (max-width: {rng.randint(320, 1440)}px) {{ .{snake(rng).replace('_', '-')} {{ margin: 0 auto; }} }}",
            f'<span class="sc-{rand(rng, string.ascii_letters, 6)} {rand(rng, string.ascii_letters, 6)}">{rng.choice(WORDS)}</span>',
            f"@font-face {{ font-family: '{name}'; src: url(data:font/woff2;base64,"
            f"{_b64(b'wOF2' + rng.randbytes(rng.randint(80, 300)))}) format('woff2'); }}",
        ]))  # fmt: skip
    return "\n".join(out)


def minified_js(rng: random.Random) -> str:
    out = []
    for _ in range(12):
        a, b, c = (rng.choice(string.ascii_letters) for _ in range(3))
        comp = camel(rng, 2, 4, True)
        out.append(rng.choice([
            f'"./src/components/{comp}.tsx":function({a},{b},{c}){{"use strict";{c}.r({b});var '
            f'{a}={c}("./node_modules/react/index.js");{b}.default=function(){{return {a}.createElement'
            f'("div",{{className:"{comp}_{rng.choice(WORDS)}__{rand(rng, ALNUM, 5)}"}})}}}}',
            f"!function({a},{b}){{\"object\"==typeof exports&&\"undefined\"!=typeof module?module."
            f"exports={b}():\"function\"==typeof define&&define.amd?define({b}):({a}=\"undefined\"!="
            f"typeof globalThis?globalThis:{a}||self).{comp}={b}()}}(this,function(){{'use strict';",
            f"var _0x{hexs(rng, 4)}=['{camel(rng, 2, 4, False)}','{camel(rng, 2, 3, False)}'];"
            f"(function(_0x{hexs(rng, 6)},_0x{hexs(rng, 6)}){{}})(_0x{hexs(rng, 4)},0x{hexs(rng, 5)});",
            f"export{{{a} as {camel(rng, 2, 3, False)},{b} as {camel(rng, 2, 4, False)},{c} as "
            f"__vite__{camel(rng, 2, 3, False)}}};//# sourceMappingURL={rng.choice(WORDS)}-"
            f"{rand(rng, ALNUM + '-_', 8)}.js.map",
            f"const {a}=Symbol.for(\"react.{snake(rng, 1, 2).replace('_', '.')}\"),{b}=new Map;"
            f"function {camel(rng, 3, 5, False)}({c}){{return {b}.get({c})??{a}}}",
            f"__webpack_require__.d(__webpack_exports__,{{\"{camel(rng, 2, 4, False)}\":function()"
            f"{{return _{camel(rng, 2, 3, False)}__WEBPACK_IMPORTED_MODULE_{rng.randint(0, 40)}__}}}});",
            f"{a}.{camel(rng, 2, 3, False)}=\"{'.'.join(_words(rng, 2, 4))}\",{b}.i18n={{"
            f"\"{snake(rng, 2, 4)}\":\"{sentence(rng)}\"}};",
        ]))  # fmt: skip
    return "".join(out)


CATEGORIES = {
    "identifiers": identifiers, "test names": test_names, "digests": digests,
    "npm integrity": npm_integrity, "docker digests": docker_digests, "uuids": uuids,
    "paths": paths, "base64 of non-secrets": base64_ordinary, "urls": urls,
    "git shas": git_shas, "css": css, "minified js": minified_js,
}  # fmt: skip


def ordinary(seed: int = 16, documents: int = 60) -> dict[str, list[str]]:
    """Category -> its documents (each a few dozen lines)."""
    rng = random.Random(seed)
    return {name: [make(rng) for _ in range(documents)] for name, make in CATEGORIES.items()}


# Planted secrets, in the shapes of their kinds and the places they are found.


def _keys(rng: random.Random) -> list[tuple[str, str]]:
    r = lambda n: rand(rng, ALNUM, n)  # noqa: E731
    u = lambda n: rand(rng, ALNUM + "-_", n)  # noqa: E731
    jwt_body = base64.urlsafe_b64encode(json.dumps(
        {"sub": str(rng.randint(1, 10**9)), "iat": rng.randint(10**9, 2 * 10**9)}).encode())  # fmt: skip
    return [
        ("aws-access-key-id", "AKIA" + rand(rng, string.ascii_uppercase + "234567", 16)),
        ("github-token", "ghp_" + r(36)),
        ("github-token", "github_pat_" + r(22) + "_" + r(59)),
        ("gitlab-token", "glpat-" + u(20)),
        ("slack-token", f"xoxb-{rng.randint(10**11, 10**12)}-{rng.randint(10**12, 10**13)}-{r(24)}"),
        ("stripe-key", rng.choice(["sk_live_", "rk_live_", "sk_test_"]) + r(rng.randint(24, 99))),
        ("openai-key", "sk-proj-" + u(rng.randint(40, 150))),
        ("anthropic-key", "sk-ant-api03-" + u(93) + "AA"),
        ("google-api-key", "AIza" + u(35)),
        ("google-oauth-secret", "GOCSPX-" + u(28)),
        ("google-oauth-token", "ya29." + u(rng.randint(60, 200))),
        ("npm-token", "npm_" + r(36)),
        ("pypi-token", "pypi-AgEIcHlwaS5vcmc" + u(rng.randint(60, 150))),
        ("huggingface-token", "hf_" + rand(rng, string.ascii_letters, 34)),
        ("sendgrid-key", "SG." + u(22) + "." + u(43)),
        ("jwt", "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + jwt_body.decode().rstrip("=") + "."
                + u(43)),
    ]  # fmt: skip


def _generic(rng: random.Random) -> str:
    """A generated secret with no prefix: base64 of random bytes or random letters and digits,
    32 characters or more (what key generators give)."""
    return rng.choice([
        lambda: _b64(rng.randbytes(rng.choice([24, 32, 48]))),
        lambda: base64.urlsafe_b64encode(rng.randbytes(32)).decode().rstrip("="),
        lambda: rand(rng, ALNUM, rng.choice([32, 40, 64])),
        lambda: rand(rng, B64, 40),
    ])()  # fmt: skip


def planted(seed: int = 16, each: int = 12) -> list[tuple[str, str, str]]:
    """(kind, text, the secret in it) for every kind, `each` of each, in several contexts."""
    rng = random.Random(seed + 1)
    out: list[tuple[str, str, str]] = []
    for _ in range(each):
        for kind, key in _keys(rng):
            name = rng.choice(WORDS).upper() + "_" + rng.choice(["KEY", "TOKEN", "SECRET"])
            text = rng.choice([
                f"export {name}={key}", f'  "{rng.choice(WORDS)}": "{key}",',
                f"curl -H 'X-Api: {key}' https://api.example.com/v1/{rng.choice(WORDS)}",
                f"INFO using credentials {key} for {rng.choice(WORDS)}",
                f"{sentence(rng)} {key} {sentence(rng)}",
            ])  # fmt: skip
            out.append((kind, text, key))
        secret = _generic(rng)
        text = rng.choice([
            f'{{"{rng.choice(WORDS)}": "{secret}"}}', f"--{rng.choice(WORDS)}={secret}",
            f"{sentence(rng)} {secret}", f"value: {secret}",
        ])  # fmt: skip
        out.append(("high-entropy", text, secret))
        # In a URL a key is URL-safe (a "/" would split the path).
        secret = base64.urlsafe_b64encode(rng.randbytes(rng.choice([24, 32]))).decode().rstrip("=")
        text = f"https://example.com/{rng.choice(WORDS)}/{secret}?lang=en"
        out.append(("high-entropy", text, secret))
        password = rand(rng, ALNUM + "!%^*", rng.randint(10, 20))
        user = rng.choice(WORDS)
        out.append(("password-in-url", f"postgres://{user}:{password}@db.{rng.choice(WORDS)}"
                    f".internal:5432/{rng.choice(WORDS)}", password))  # fmt: skip
        value = rand(rng, ALNUM, rng.randint(12, 30))
        out.append(("env-secret", f"{rng.choice(WORDS).upper()}_PASSWORD={value}", value))
        token = rand(rng, ALNUM + "-._~", rng.randint(30, 60))
        out.append(("bearer-token", f"Authorization: Bearer {token}", token))
        secret = rand(rng, B64, 40)
        out.append(("aws-secret-access-key", f"aws_secret_access_key = {secret}", secret))
        body = _wrap(_b64(rng.randbytes(600)), 64)
        out.append(("private-key", "-----BEGIN RSA PRIVATE" + " KEY-----\n" + body
                    + "\n-----END RSA PRIVATE" + " KEY-----", body))  # fmt: skip
    return out


def word_count(docs: dict[str, list[str]]) -> int:
    return sum(len(d.split()) for texts in docs.values() for d in texts)
