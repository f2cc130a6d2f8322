"""A class's library: files a teacher (the class page) or the operator (`cohorts files add NAME FILE`)
gives a class. Each is stored and indexed once, owned by the class (bot.library, origin « class »),
and read by the students who are in the class now: the tools ask `student_classes` at each turn
(a message's turn reads them once, with the pools, and gives them to its tools under
`TURN_CLASSES`), so a student who leaves it no longer sees its files, and none can delete or
change them. Who opened
which file (read with the tutor, or sent to them) is kept per file and student for the class page."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from bot import library
from bot.services import Services
from bot.storage.models import ClassFileOpen, Cohort, CohortMember, User, UserFile
from bot.texts import fr_en

__all__ = ["MAX_CLASS_FILE_BYTES", "TURN_CLASSES", "ClassFile", "Opener", "add_class_file", "class_files",
           "class_label", "open_file", "record_opening", "student_classes"]

# ToolContext.extra: the student's classes (id: name) as the turn read them; absent, a tool reads them.
TURN_CLASSES = "student_classes"

# A class's file as the operator adds it (the dashboard's form is smaller: bot.web.admin.uploads).
MAX_CLASS_FILE_BYTES = 20 * 1024 * 1024


@dataclass(frozen=True)
class Opener:
    user_id: int
    name: str  # as the class page shows a student: their name, else their number
    first_at: datetime
    count: int


@dataclass(frozen=True)
class ClassFile:
    id: int
    name: str
    mime: str
    size: int
    created_at: datetime
    opened_by: list[Opener] = field(default_factory=list)


async def add_class_file(services: Services, cohort: Cohort, name: str, data: bytes) -> UserFile:
    """Stores the file once as the class's, its text extracted (a photo or a scan read by OCR) and
    indexed for search, and commits."""
    async with services.sessions() as db:
        row = await library.add_file(services, db, user_id=None, cohort_id=cohort.id, name=name,
                                     mime="", data=data, origin="class")  # mime: from the name
        if library.needs_reading(row):
            text = await library.read_text_of(services, row, data)
            await library.read_and_index(services, db, row, text, rename=False)
        await db.commit()
    return row


async def student_classes(db: AsyncSession, user_id: int) -> dict[int, str]:
    """The classes the student is in now (id: name): whose files they see."""
    rows = await db.execute(select(Cohort.id, Cohort.name)
                            .join(CohortMember, CohortMember.cohort_id == Cohort.id)
                            .where(CohortMember.user_id == user_id))
    return {int(cohort_id): str(name) for cohort_id, name in rows}


def class_label(name: str, language: str) -> str:
    """How a class's file is marked for the model and the student: « (classe 6e A) »."""
    return fr_en(language, f"(classe {name})", f"(class {name})")


async def record_opening(db: AsyncSession, file_id: int, user_id: int, now: datetime) -> None:
    """One more opening of a class's file by a student (flushed with the caller's transaction):
    the first one inserts the row, two at once count both (the database's upsert)."""
    insert = pg_insert if db.get_bind().dialect.name == "postgresql" else sqlite_insert
    statement = insert(ClassFileOpen).values(file_id=file_id, user_id=user_id, first_at=now, last_at=now,
                                             count=1)
    await db.execute(statement.on_conflict_do_update(
        index_elements=[ClassFileOpen.file_id, ClassFileOpen.user_id],
        set_={"last_at": now, "count": ClassFileOpen.count + 1}))


async def class_files(db: AsyncSession, cohort_id: int) -> list[ClassFile]:
    """The class's files, newest first, each with the students who opened it (by name)."""
    files = (await db.scalars(select(UserFile).where(UserFile.cohort_id == cohort_id)
                              .order_by(UserFile.created_at.desc(), UserFile.id.desc()))).all()
    opened: dict[int, list[Opener]] = {}
    if files:
        rows = await db.execute(
            select(ClassFileOpen.file_id, User.id, User.display_name, User.phone, ClassFileOpen.first_at,
                   ClassFileOpen.count)
            .join(User, User.id == ClassFileOpen.user_id)
            .where(ClassFileOpen.file_id.in_([f.id for f in files])))
        for file_id, user_id, display_name, phone, first_at, count in rows:
            opened.setdefault(int(file_id), []).append(
                Opener(int(user_id), display_name or phone or "—", first_at, int(count)))
    return [ClassFile(f.id, f.name, f.mime, f.size, f.created_at,
                      sorted(opened.get(f.id, []), key=_by_name)) for f in files]


def _by_name(opener: Opener) -> tuple[str, int]:
    return opener.name.casefold(), opener.user_id


async def open_file(db: AsyncSession, user_id: int, file_id: object,
                    now: datetime) -> tuple[UserFile | None, dict[int, str]]:
    """The user's file with this id, or one of a class they are in now (then one more opening for
    the teacher, flushed with the caller's transaction), and those classes; None for anyone
    else's, a class they are not in, or one they left."""
    classes = await student_classes(db, user_id)
    row = await library.get_file(db, user_id, file_id, list(classes))
    if row is not None and row.cohort_id is not None:
        await record_opening(db, row.id, user_id, now)
    return row, classes
