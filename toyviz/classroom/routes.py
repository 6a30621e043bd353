"""The phones' side of a lecture: small FastAPI routes beside the Gradio app, and the page they serve.

    GET  /class                 the phone page, asking for the join code
    GET  /class/{code}          the phone page of a lecture (phone.html: plain HTML, CSS and JavaScript)
    GET  /class/{code}/now      the current step, a few hundred bytes of JSON; 304 when the phone's ETag is current
    POST /class/{code}/vote     {"device", "step", "choice"}: one vote per device per step
    POST /class/{code}/step     {"secret", "step"}: the presenter moves (403 without the presenter's secret)
    POST /class/{code}/reveal   {"secret"}: the presenter reveals (403 without it)

Phones poll /now about once a second instead of holding one of Gradio's queued events open (a `gr.Timer` tick is
a queued event, and a sleeping phone's timer stops anyway). An unchanged step costs one SQLite read and a 304 of
no body; a changed one is built once per version and shared by every phone. `attach` adds the routes to a running
Gradio app: `demo.app` once `demo.launch(..., prevent_thread_lock=True)` has returned. A reveal is the presenter's
(toyviz.app.presenter: it asks the model and hands the answer to the store), passed in as `reveal`.
"""
from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path

import fastapi
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response
from pydantic import BaseModel, Field

from toyviz import i18n
from toyviz.classroom import store
from toyviz.classroom.store import LONGEST_CHOICE, Lecture, Lectures, normal
from toyviz.classroom.throttle import Throttle
from toyviz.lessons.format import LessonError
from toyviz.lessons.library import lesson_of
from toyviz.serving.proxy import client_address, trusted_hops

# the page's typed answer holds what a vote may hold (its maxlength and counter), said once, here and in the store
PAGE = Path(__file__).with_name("phone.html").read_text(encoding="utf-8").replace("__LONGEST_CHOICE__", str(LONGEST_CHOICE))
# the page in each language, its words filled in once (toyviz.i18n: the phone's ?lang=, else its Accept-Language)
PAGES = {lang: PAGE.replace("__WORDS__", json.dumps({key.removeprefix("phone."): text for key, text in
                                                    i18n.catalogue(lang).items() if key.startswith("phone.")},
                                                   ensure_ascii=False)).replace("__LANG__", json.dumps(lang))
         for lang in i18n.LANGUAGES}
# a join is a page load or a look-up of a code that is not a lecture's: a hall behind one address joins at
# once, a script guessing codes gets one a second (31**6 codes: years to find a lecture)
JOINS = (300, 1.0)
# (burst, per second): a hall's votes on a step at once, and a step every 12 s all lecture long (a hall's 120
# phones often share one address); a loop stuffing a ballot box with made-up devices gets ten a second, and a
# step's box holds at most store.VOTES_PER_STEP
VOTES = (300, 10.0)
PAYLOADS_KEPT = 256              # built /now answers kept (a lecture's current version each; old ones dropped)


class Vote(BaseModel):
    device: str = Field(pattern=r"^[A-Za-z0-9_-]{8,64}$")    # random, made by the phone, kept in its localStorage
    step: int                                                 # the step the phone shows: a late vote is not moved on
    choice: str         # its length is checked by `vote`, which says why in words the phone shows (pydantic's would not)


class Move(BaseModel):
    secret: str
    step: int


class Secret(BaseModel):
    secret: str


def attach(app: fastapi.FastAPI, lectures: Lectures, reveal: Callable[[str], Lecture] | None = None) -> None:
    """Serve the phones' page and routes from `app` (the Gradio app's FastAPI app, `demo.app`). `reveal`: the
    presenter's reveal, secret → the lecture revealed (None: the store's own, with no model to answer)."""
    app.include_router(router(lectures, reveal or lectures.reveal))


def client(request: Request) -> str:
    """Whom the throttles count: the visitor's address as the trusted proxies report it (toyviz.serving.proxy). The
    peer's alone would be the Space's proxy for every phone in the world: one script's votes would spend them all."""
    return client_address(request.headers.get("x-forwarded-for"), request.client.host if request.client else None,
                          trusted_hops())


def refused(throttle: Throttle, request: Request) -> Response | None:
    wait = throttle.wait(client(request))
    return JSONResponse({"error": said("too_many", request)}, 429,
                        {"Retry-After": str(max(1, round(wait)))}) if wait else None


def said(key: str, request: Request, **fields) -> str:
    """A refusal in the phone's language (its page's ?lang=, which the page puts on every route it asks, else its
    Accept-Language): the catalogues' errors.phone.<key>."""
    return i18n.t("errors.phone." + key, i18n.language(request), **fields)


def not_found(code: str, request: Request, ended: bool = False) -> JSONResponse:
    # ended: End lecture, the presenter closed it
    return JSONResponse({"error": said("ended" if ended else "no_lecture", request, code=normal(code))}, 404)


def unfit(choice: str, request: Request) -> str:
    """Why a typed answer cannot be a vote, in the words the phone shows ("" when it can)."""
    if not choice.strip():
        return said("empty", request)
    if len(choice) > LONGEST_CHOICE:
        return said("too_long", request, length=len(choice), most=LONGEST_CHOICE)
    return ""


def not_counted(lectures: Lectures, lecture: Lecture, request: Request) -> str:
    """Why the store refused a fitting vote on the lecture's current step (it says only False)."""
    if lectures.closed(lecture.code, lecture.step):
        return said("closed", request)
    if sum(lectures.tally(lecture.code, lecture.step).values()) >= store.VOTES_PER_STEP:
        return said("full", request, most=store.VOTES_PER_STEP)
    return said("already", request)


def step_of(lecture: Lecture):
    """The lecture's lesson and its current step (None: the lesson file now has fewer steps); OSError or LessonError
    when the lecturer's file moved or broke."""
    lesson = lesson_of(lecture.lesson)
    return lesson, lesson.steps[lecture.step] if lecture.step < len(lesson.steps) else None


def current(lectures: Lectures, lecture: Lecture, request: Request) -> dict:
    """What a phone shows of a lecture: the step, its question and choices, and once revealed, the model's
    answer with the class's votes beside it (its detail in the lecture's language, as the Reveal wrote it)."""
    now = {"step": lecture.step, "steps": lecture.steps, "revealed": lecture.revealed, "version": lecture.version,
           "changed": round(lecture.changed)}
    try:
        lesson, step = step_of(lecture)
    except (OSError, LessonError) as err:        # the lecturer's file moved or broke: say so, keep following
        return {**now, "lesson": "", "title": said("unreadable", request, why=err)}
    if step is None:
        return {**now, "lesson": lesson.title, "title": said("step_gone", request)}
    question = step.question
    now.update(lesson=lesson.title, title=step.title, link=step.link, question=question and question.ask,
               choices=list(question.choices) if question else [])
    if lecture.revealed and question:
        answer = lectures.answer(lecture.code, lecture.step)
        now.update(point=step.point, tally=lectures.tally(lecture.code, lecture.step),
                   answer=answer and {"value": answer.value, "detail": answer.detail, "choice": answer.choice})
    return now


def router(lectures: Lectures, reveal: Callable[[str], Lecture]) -> APIRouter:
    api = APIRouter(prefix="/class")
    joins, votes = Throttle(*JOINS), Throttle(*VOTES)
    built: dict[tuple[str, int, str], bytes] = {}             # (code, version, language) → the /now body

    @api.get("", response_class=HTMLResponse)
    @api.get("/{code}", response_class=HTMLResponse)
    def page(request: Request, code: str = ""):
        return refused(joins, request) or HTMLResponse(PAGES[i18n.language(request)],
                                                       headers={"Cache-Control": "no-cache", "Vary": "Accept-Language"})

    @api.get("/{code}/now")
    async def now(code: str, request: Request):              # on the event loop: one indexed read, no thread hop
        lecture = lectures.now(code)
        if lecture is None:
            return refused(joins, request) or not_found(code, request, lectures.ended(code))
        key = (lecture.code, lecture.version, i18n.language(request))
        tag = '"{}.{}.{}"'.format(*key)
        headers = {"ETag": tag, "Cache-Control": "no-cache"}
        if request.headers.get("if-none-match") == tag:
            return Response(status_code=304, headers=headers)
        if key not in built:
            if len(built) >= PAYLOADS_KEPT:
                built.clear()
            built[key] = json.dumps(current(lectures, lecture, request), ensure_ascii=False, separators=(",", ":")).encode()
        return Response(built[key], media_type="application/json", headers=headers)

    @api.post("/{code}/vote")
    def vote(code: str, ballot: Vote, request: Request):
        if too_many := refused(votes, request):
            return too_many
        lecture = lectures.now(code)
        if lecture is None:
            return not_found(code, request)
        if ballot.step != lecture.step:
            return JSONResponse({"counted": False, "step": lecture.step,
                                 "why": said("moved_on", request)}, 409)
        try:
            step = step_of(lecture)[1]
        except (OSError, LessonError):              # no step to check against: /now shows no choices either
            step = None
        choices = step.question.choices if step and step.question else ()
        if choices and ballot.choice not in choices:
            return JSONResponse({"error": said("not_a_choice", request, choice=repr(ballot.choice))}, 422)
        if problem := unfit(ballot.choice, request):
            return JSONResponse({"counted": False, "step": lecture.step, "why": problem}, 422)
        counted = lectures.vote(code, ballot.device, ballot.choice)
        return {"counted": counted, "step": lecture.step, "why": "" if counted else not_counted(lectures, lecture, request)}

    def presenter(code: str, secret: str, request: Request, act) -> Response | dict:
        lecture = lectures.presenting(secret)
        if lecture is None or lecture.code != normal(code):
            return refused(joins, request) or JSONResponse(
                {"error": said("presenter_only", request)}, 403)
        return dataclasses.asdict(act())

    @api.post("/{code}/step")
    def step(code: str, move: Move, request: Request):
        return presenter(code, move.secret, request, lambda: lectures.move(move.secret, move.step))

    @api.post("/{code}/reveal")
    def reveal_step(code: str, body: Secret, request: Request):
        return presenter(code, body.secret, request, lambda: reveal(body.secret))

    return api
