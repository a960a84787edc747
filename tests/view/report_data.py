"""The data a written report embeds, decoded the way the page decodes it (assets/report.js)."""
import base64
import gzip
import json
import re

from ecab.view.writer import SHARED_KEY


def embedded(html_text: str) -> tuple[dict, dict[tuple[int, int], list]]:
    """(main data, {(run, chunk): details}) decoded from a report the way the page decodes them."""
    def decode(encoding: str, body: str):
        return json.loads(body if encoding == "json" else gzip.decompress(base64.b64decode(body)))

    def unshare(value, strings):
        if isinstance(value, list):
            return [unshare(v, strings) for v in value]
        if isinstance(value, dict):
            if list(value) == [SHARED_KEY]:
                return strings[value[SHARED_KEY]]
            return {k: unshare(v, strings) for k, v in value.items()}
        return value
    main = None
    chunks = {}
    for attrs, body in re.findall(r'<script type="application/x-ecab"([^>]*)>(.*?)</script>', html_text, re.S):
        encoding = re.search(r'data-enc="(\w+)"', attrs).group(1)
        if 'id="ecab-main"' in attrs:
            main = decode(encoding, body)
        else:
            run, chunk = (int(re.search(rf'data-{k}="(\d+)"', attrs).group(1)) for k in ("run", "chunk"))
            shared = decode(encoding, body)
            chunks[run, chunk] = unshare(shared["items"], shared["strings"])
    return main, chunks
