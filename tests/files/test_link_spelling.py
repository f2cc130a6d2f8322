"""A file or job id has one spelling in a link (`/files/007/…` is not file 7), and a signature
that is not ASCII is refused like any wrong one, never an error."""

from __future__ import annotations

import pytest

from bot.channel.links import file_path, job_signature
from tests.support.harness import Harness
from tests.support.job_page import make_job, page_path
from tests.support.stored import stored_file

# One backend: the database only holds the file; the document does not depend on it.
pytestmark = pytest.mark.one_backend

PHONE = "+2250700000092"
PAGE = b"%PDF-1.4 le bilan de l'utilisateur\n%%EOF"
ARABIC_DIGITS = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")  # str.isdigit takes them; int reads them

# {id} {expires} {sig} {name} of a genuine link, and the same in Arabic-Indic digits ({ar_…}).
FILE_VARIANTS = [
    "/files/00{id}/{expires}/{sig}/{name}",
    "/files/{ar_id}/{expires}/{sig}/{name}",
    "/files/{id}/0{expires}/{sig}/{name}",
    "/files/{id}/{ar_expires}/{sig}/{name}",
    "/files/{id}/{expires}/é{sig_tail}/{name}",
]
JOB_PATHS = ["/jobs/00{id}{events}?sig={sig}", "/jobs/{ar_id}{events}?sig={sig}"]
JOB_SIGS = ["{expires}.é{mac_tail}", "{ar_expires}.{mac}", "0{expires}.{mac}", "{expires}.{mac_head}%FF"]


@pytest.mark.parametrize("variant", FILE_VARIANTS)
async def test_a_file_link_in_another_spelling_serves_nothing(harness: Harness, variant: str) -> None:
    h = harness
    user = await h.make_user(PHONE)
    row = await stored_file(h, user.id, "bilan.pdf", "application/pdf", PAGE)
    path = file_path(h.settings, row)
    _files, file_id, expires, sig, name = path.strip("/").split("/")
    status, _headers, body = await h.get(path)
    assert status == 200 and body == PAGE
    wrong = variant.format(id=file_id, ar_id=file_id.translate(ARABIC_DIGITS), expires=expires,
                           ar_expires=expires.translate(ARABIC_DIGITS), sig=sig, sig_tail=sig[1:], name=name)
    for method in ("GET", "HEAD"):
        status, _headers, body = await h.get(wrong, method)
        assert status == 404, (wrong, method, status)
        assert PAGE not in body


@pytest.mark.parametrize("events", [False, True])
@pytest.mark.parametrize("variant", JOB_PATHS + JOB_SIGS)
async def test_a_job_link_in_another_spelling_opens_nothing(harness: Harness, variant: str,
                                                            events: bool) -> None:
    h = harness
    user = await h.make_user(PHONE)
    job = await make_job(h, user, "Mon bilan secret")
    good = job_signature(h.settings, job.id)
    expires, mac = good.split(".")
    async with h.session.get(h.base_url + page_path(h, job.id, sig=good, events=events)) as resp:
        assert resp.status == 200  # (a running job's stream stays open: not read to its end)
    parts = {"id": job.id, "ar_id": str(job.id).translate(ARABIC_DIGITS), "sig": good, "expires": expires,
             "ar_expires": expires.translate(ARABIC_DIGITS), "mac": mac, "mac_tail": mac[1:],
             "mac_head": mac[:-1], "events": "/events" if events else ""}
    if variant in JOB_PATHS:  # another spelling of the id: no such page
        wrong, expected = variant.format(**parts), 404
    else:  # a signature that is not the one given: refused
        wrong, expected = page_path(h, job.id, sig=variant.format(**parts), events=events), 403
    status, _headers, body = await h.get(wrong)
    assert status == expected, (wrong, status)
    assert "Mon bilan secret" not in body.decode()
