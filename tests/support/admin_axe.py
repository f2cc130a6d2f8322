"""axe-core (the npm package) for the dashboard's browser tests: its tarball fetched once from the
npm registry, checked against the pinned integrity hash, its axe.min.js kept in a cache directory;
then injected into a page and run. Unavailable (no network, wrong hash) is an error, never a skip."""

from __future__ import annotations

import base64
import hashlib
import io
import os
import tarfile
import urllib.request
from pathlib import Path
from typing import Any

from playwright.async_api import Page

VERSION = "4.14.1"
TARBALL = f"https://registry.npmjs.org/axe-core/-/axe-core-{VERSION}.tgz"
INTEGRITY = "sha512-FHfa+lmNjQZfJz1q8wKqIDwC6DExcHt/pkjNQb09a3NPjCKg2rhu5qb2S4r76ASyFNNtuFooJpZe37OgudVGtQ=="
CACHE = Path(os.environ.get("AXE_CACHE_DIR", Path.home() / ".cache" / "deblo-tests"))
BLOCKING = ("serious", "critical")


def axe_source() -> str:
    """axe.min.js of the pinned version, from the cache or the registry."""
    cached = CACHE / f"axe-core-{VERSION}.min.js"
    if cached.is_file():
        return cached.read_text(encoding="utf-8")
    try:
        with urllib.request.urlopen(TARBALL, timeout=60) as resp:
            data = resp.read()
    except OSError as exc:
        raise RuntimeError(f"axe-core {VERSION} could not be fetched from {TARBALL}: {exc}") from exc
    digest = "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()
    if digest != INTEGRITY:
        raise RuntimeError(f"axe-core {VERSION} from {TARBALL} does not match its integrity hash")
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        member = tar.extractfile("package/axe.min.js")
        if member is None:
            raise RuntimeError("axe-core's tarball has no package/axe.min.js")
        source = member.read().decode("utf-8")
    CACHE.mkdir(parents=True, exist_ok=True)
    cached.write_text(source, encoding="utf-8")
    return source


async def serious_findings(page: Page) -> list[dict[str, Any]]:
    """axe's violations of impact serious or critical on the page as it is now (the page's CSP
    allows no script: the browser context must be made with bypass_csp=True)."""
    await page.add_script_tag(content=axe_source())
    result: dict[str, Any] = await page.evaluate("async () => await axe.run(document)")
    return [{"id": v["id"], "impact": v["impact"], "help": v["help"],
             "nodes": [n["target"] for n in v["nodes"]][:5]}
            for v in result["violations"] if v.get("impact") in BLOCKING]
