"""The dashboard: a template with the controls in a sidebar and the views in the main area.

:func:`build_dashboard` makes one :class:`Dashboard` per session (``app.py`` calls it from
``panel serve``; a notebook calls it and displays it). It wires what only a live session has:
a background executor with a loading indicator and elapsed time, notifications for every error,
the URL query (dataset, δ, θ, seed, boundary, the tab, the bridge's sliders) and the theme.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import json
import time
from typing import ClassVar
from urllib.parse import parse_qsl, urlencode

import panel as pn
import param
from panel.io.resources import CDN_DIST
from panel.io.state import set_curdoc
from panel.util import parse_query

from attentive.app import server_log
from attentive.app.address import AddressInPlace
from attentive.app.calibration_view import CalibrationView
from attentive.app.comm import KernelChangesStay, send_in_order
from attentive.app.controls import MODEL_INPUTS, UPLOAD_PREFIX, URL_PARAMETERS
from attentive.app.focus import FocusView
from attentive.app.numbers import HeadlineNumbers, OperatingPointTable, SnippetView
from attentive.app.plots import (
    COLORS,
    PrecisionRecallView,
    TheoryView,
    TradeoffView,
    TrajectoryView,
)
from attentive.app.plots.bridge import (
    BRIDGE_URL,
    BridgeTab,
    BridgeUrl,
    bridge_url_reset,
    bridge_url_values,
)
from attentive.app.state import DashboardState
from attentive.app.tour import TABS, Tour
from attentive.app.widgets import Controls, ExportPanel, SketchNote

__all__ = ["Dashboard", "build_dashboard"]

MEASURE_PAUSE = 0.3  # seconds after a move before background work starts (if still current)

TITLE = "attentive — focus of attention for linear predictors"
INTRO = (
    "A linear predictor's score is a sum of n terms; attentive prediction adds them in a random "
    "order and **stops as soon as the partial score S_t crosses a boundary**. Beyond the paper, "
    "a **sketched rule** starts at a cheap sketch of the score. It then walks only what the "
    "sketch got wrong."
)
TERMS = {"kernel": "support vectors", "linear": "features", "boosting": "weak learners"}
TIGHT = "p { margin: 2px 0; }"  # the first screen's text blocks: a plot must fit below them


# Bokeh stacks a Tabs' children in one grid cell and hides the inactive ones with ``visibility:
# hidden``, so the tabs took the height of the tallest: on a phone the Brownian-bridge tab ended
# in ~650 px of blank scroll (the walks tab's height). Inactive tabs take no room instead.
TABS_CSS = """
:host > .bk-panel-models-layout-Column[style*="visibility: hidden"] { display: none !important; }
/* On a phone the three tab names filled the bar's width and the last touched the screen's edge. */
@media (max-width: 480px) { .bk-tab { padding-left: 6px !important; padding-right: 6px !important; } }
"""
# Narrow screens (phones): the sidebar starts closed and opens over the main area from the header
# button, so the main area keeps the whole width. The template's button toggles the class
# "hidden" on #sidebar; below 700 px its meaning is inverted (closed unless "hidden" is set).
RESPONSIVE_CSS = """
/* Panel's Fast sidebar is 100vh - 76 px tall plus 20 px of padding: 8 px past the content area
   below the 64 px header, so the whole page scrolled by 8 px (a click on a thumbnail, which
   scrolls the focus view into sight, pushed the header's title up). */
#sidebar { box-sizing: border-box; height: calc(100vh - 64px); }
@media (max-width: 700px) {
  #sidebar:not(.hidden) { min-width: 0 !important; max-width: 0 !important; padding: 0 !important;
                          border: 0 !important; overflow: hidden !important; }
  #sidebar.hidden { position: absolute !important; z-index: 20; left: 0;
                    min-width: min(330px, 90vw) !important; max-width: min(330px, 90vw) !important;
                    padding: 15px 10px 5px 5px !important; overflow-y: auto !important;
                    background-color: var(--panel-surface-color, #fff);
                    box-shadow: 2px 0 10px #0006; height: calc(100vh - 64px); }
  /* (to the screen's foot: 12 px short, the main area's tab bar showed under its last row) */
  /* The toggle's hover tooltip stayed over the title after a tap (a touch leaves the pointer
     there); the button is the only one in the header's corner. */
  fast-tooltip[anchor="sidebar-button"] { display: none !important; }
  #header .title { font-size: 16px !important; white-space: nowrap; overflow: hidden;
                   text-overflow: ellipsis; }
  #main { padding: 0 4px !important; }
}
"""
# Panel's files as a Jupyter server serves them (Panel's own server extension), for a notebook.
NOTEBOOK_DIST = "/panel_dist/"
# A phone's browser lays the page out at the device's width (not a 980 px desktop page shrunk).
META_VIEWPORT = "width=device-width, initial-scale=1"


#: A notification's longest message: the advice at the end of a long refusal (an ambiguous LIBSVM
#: index base, say, ~600 characters) is kept whole; beyond this it is cut with an ellipsis.
NOTIFICATION_CHARS = 1200
# Where messages show, and for how long (ms): an error or a warning stays long enough to read;
# a note (a clicked point moved to the slider's nearest, no model file yet) less long.
NOTIFICATION_POSITION = "top-right"
NOTIFICATION_MS = {"error": 15000, "warning": 15000, "info": 8000}


#: Notifications held back while the page was built (an address's refused values, say) show one
#: by one up to this many of a level; more show as one notification, a line each, up to
#: UNTOLD_LINES lines (an address of sixteen bad values stacked sixteen over the page).
UNTOLD_APART = 3
UNTOLD_LINES = 6
UNTOLD_LINE_CHARS = 300  # (a line's text beyond this is cut with an ellipsis)


def held_back(untold: list) -> list:
    """The notifications ``(text, level)`` held back while the page was built, as the loaded
    page shows them: in order, each level's one by one up to :data:`UNTOLD_APART` of them, else
    one notification that counts them and gives each a line (the first :data:`UNTOLD_LINES`,
    and how many more). Texts are already :func:`notification_text`'s."""
    by_level: dict = {}
    for text, level in untold:
        by_level.setdefault(level, []).append(text)
    shown = []
    for level, texts in by_level.items():
        if len(texts) <= UNTOLD_APART:
            shown.extend((text, level) for text in texts)
            continue
        kind = {"error": "errors", "warning": "warnings"}.get(level, "notes")
        lines = [f"{len(texts)} {kind} while the page opened:"]
        lines += [f"• {_cut_escaped(text, UNTOLD_LINE_CHARS)}" for text in texts[:UNTOLD_LINES]]
        if len(texts) > UNTOLD_LINES:
            lines.append(f"… and {len(texts) - UNTOLD_LINES} more.")
        shown.append(("<br>".join(lines), level))
    return shown


def _cut_escaped(text: str, limit: int) -> str:
    """Escaped HTML text cut to ``limit`` characters with an ellipsis, never inside an entity."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    amp = cut.rfind("&")
    if amp > cut.rfind(";"):  # an entity cut in two: cut before it
        cut = cut[:amp]
    return cut.rstrip() + "…"


def notification_text(message: str) -> str:
    """A message as a notification shows it: notifications render HTML, so its text is escaped
    (a refusal quoting ``'<label> <index>:<value>'`` lost those words as tags), and cut at
    :data:`NOTIFICATION_CHARS`."""
    if len(message) > NOTIFICATION_CHARS:
        message = message[: NOTIFICATION_CHARS - 1].rstrip() + "…"
    return html.escape(message, quote=False)


class OfflineFast(pn.theme.Fast):
    """Panel's Fast design without its link to a web font.

    The dashboard must work offline, where the font's stylesheet cannot load and the browser
    reports it as a console error; the page uses the system's sans-serif instead. A subclass
    handed to the template (its public ``design`` parameter), so Panel's own ``Fast`` is untouched.
    """

    # Fast's resources without "font". Its own script is named by its bundled address, because
    # Panel looks a relative name up under the class's name ("offlinefast/…"), which has none.
    _resources: ClassVar[dict] = {
        **{key: value for key, value in pn.theme.Fast._resources.items() if key != "font"},
        "js_modules": {
            **pn.theme.Fast._resources["js_modules"],
            "fast-design": f"{CDN_DIST}bundled/fast/js/fast_design.js",
        },
    }


def _extension(inline: bool | None = None) -> None:
    """Load Panel's extensions. ``inline=True`` (a notebook) embeds Bokeh's and Panel's scripts
    in the output instead of loading them from a CDN, so that the dashboard renders offline."""
    kw = {} if inline is None else {"inline": inline}
    pn.extension("tabulator", "codeeditor", notifications=True, sizing_mode="stretch_width", **kw)


def model_words(walks, name: str) -> str:
    """The dataset (``name``) and model in use, in two lines of Markdown."""
    if walks is None:
        return ""
    p, ds = walks.problem, walks.problem.dataset
    name = name.removeprefix(UPLOAD_PREFIX)
    terms = f"{walks.n_terms:,} terms ({TERMS.get(walks.term_kind, 'terms')})"
    if p.model_source.uploaded and p.trained_here:
        model = (
            f"uploaded {p.description}: {terms}, the model this page trains for these settings "
            f"(fitted on {len(p.y_fit):,} examples; {len(p.y_cal):,} held out to calibrate)"
        )
    elif p.model_source.uploaded:
        model = (
            f"uploaded {p.description}: {terms}, fitted elsewhere; centering and reference "
            f"statistics from {len(p.y_fit):,} training examples, {len(p.y_cal):,} held out "
            "(no guarantee: the model may have seen them)"
        )
    else:
        model = (
            f"{p.description}: {terms}, fitted on {len(p.y_fit):,} examples; "
            f"{len(p.y_cal):,} held out to calibrate"
        )
    return (
        f"**{name}**: positive class: {ds.positive_meaning}; {walks.S.shape[0]:,} test "
        f"examples ({int(walks.y_test.sum()):,} positive), {ds.n_features:,} features.  \n"
        f"{model}."
    )


def url_value(value):
    """``value`` as Panel's location reads it back from the query it writes for it: JSON for
    what is not text, and a query value that looks like a number or a boolean is read as one
    (the text "0.05" comes back as the number 0.05, None as the text "null")."""
    text = value if isinstance(value, str) else json.dumps(value)
    return parse_query("?" + urlencode({"v": text})).get("v", text)


def _as_handled(value) -> str:
    """An address's value as :meth:`Dashboard._url_to_state` remembers it: its JSON, so that
    NaN (which equals nothing, itself included) is the same value when the address comes again."""
    return json.dumps(value, sort_keys=True, default=str)


class UrlControls(param.Parameterized):
    """The controls as the page's URL holds them: any value, unchecked (see
    :meth:`Dashboard.sync_url`)."""


for _name in URL_PARAMETERS:
    UrlControls.param.add_parameter(_name, param.Parameter(default=None))


# The URL's name of each tab (``?tab=``), in the order of tour.TABS.
TAB_NAMES = ("walks", "pick", "bridge")


class TabUrl(param.Parameterized):
    """The active tab as the URL holds it: a name of :data:`TAB_NAMES`, unchecked (None: not in
    the URL)."""

    tab = param.Parameter(default=None)


def theme_name(value: str | None) -> str | None:
    """Panel's name of the theme ``?theme=value`` asks for (``light`` is its ``default``), or
    None where it names none. As Panel's ``config.theme`` reads it (the plots' ink follows
    that): ``Dark`` is not ``dark`` there, and a dark page took black marks."""
    from panel.theme.base import THEMES

    if value is None:
        return None
    name = value.strip("'\"")
    name = "default" if name == "light" else name
    return name if name in THEMES else None


def _query_theme() -> str | None:
    """The page's ``?theme=`` as it was written, or None."""
    args = pn.state.session_args
    value = args.get("theme") if isinstance(args, dict) else None
    return value[0].decode("utf-8", "replace") if value else None


#: What an address naming an uploaded file says of that file's model and scores, not applied
#: to the dataset shown instead (:meth:`Dashboard._from_url`).
UPLOAD_SETTINGS = ("positive_class", "model_source", "model_file", "kernel", "C", "gamma")
UPLOAD_SETTINGS += ("theta", "budget", "time_budget")


class DashboardTemplate(pn.template.FastListTemplate):
    """Panel's FastListTemplate, whose ``?theme=`` it has or none: an unknown one (``light``,
    ``Dark``, a typo) raised a KeyError in its constructor, and the page stayed blank."""

    @staticmethod
    def _get_theme_from_query_args():
        return theme_name(_query_theme())


class Dashboard(pn.viewable.Viewer):
    """One session's dashboard: a state object and its views.

    Parameters
    ----------
    state : DashboardState, optional
        Created (with the default dataset and model) when not given.
    """

    state = param.ClassSelector(class_=DashboardState)

    def __init__(self, **params):
        if params.get("state") is None:
            params["state"] = DashboardState()
        super().__init__(**params)
        self._notifications = pn.state.notifications
        self._served = False
        self._closed = False  # the browser has gone: background results are dropped
        self._handled: dict = {}  # the address's values handled (applied, snapped or refused),
        # as _as_handled gives them
        self._loaded = False  # served: the browser has loaded the page
        self._pending: list = []  # served: (holder, build) filled once the page has loaded
        self._untold: list = []  # served: notifications (text, level) for when it has
        self._plots: list = []
        self.state.param.watch(self._notify_error, "n_errors")
        self.status = pn.pane.Markdown(
            pn.bind(self._status_text, self.state.param.busy, self.state.param.elapsed),
            sizing_mode="stretch_width",
            margin=(0, 10),
        )
        self.indicator = pn.indicators.LoadingSpinner(
            value=False, size=22, color="primary", visible=False
        )
        self.state.param.watch(self._busy_changed, "busy")

    # -- live-session wiring -----------------------------------------------------------------
    def _notify_error(self, event) -> None:
        level, text = self.state.error_level, notification_text(self.state.last_error)
        if self._served and not self._loaded:
            # A notification sent while the page is being built never shows (a refused value
            # of the address was told to nobody): it waits for the page.
            self._untold.append((text, level))
            return
        self._show(text, level)

    def _show(self, text: str, level: str) -> None:
        # Captured in the session's own context: errors may arrive from a background task.
        notifications = self._notifications or pn.state.notifications
        if notifications is not None:
            getattr(notifications, level)(text, duration=NOTIFICATION_MS[level])

    def _session_closed(self, session_context) -> None:
        self._closed = True

    def _busy_changed(self, event) -> None:
        self.indicator.value = self.indicator.visible = bool(event.new)

    @staticmethod
    def _status_text(busy: bool, elapsed: float) -> str:
        return f"**Training / computing walks… {elapsed:.1f} s**" if busy else ""

    def _apply(self, fn, *args) -> None:
        """Apply a background result on the loop, sending its changes at once — unless the
        browser has gone (a tab closed while a job ran), when there is nobody to send them to.

        Before the page has loaded, Panel's ``unlocked()`` does not hold the document, and a
        change made then outside Bokeh's lock raised in the middle of the result (a model built
        from a URL's dataset before the page loaded: the rule's controls the URL held never
        reached their widgets). Applied on the next tick under the lock instead, such a change
        still missed the browser now and then: the page's document had been sent before it,
        and the change went nowhere (a fresh model for ``?boundary=budget&seed=12``: the Rule
        showed budget, but the sidebar kept the calibrated rule's δ and α sliders and no B
        slider, and "How the scale was chosen" stayed; 7 of 10 loads of a reviewer's). So a
        result that comes before the page has loaded is applied once it has, under the lock."""
        if self._closed:
            return
        doc = pn.state.curdoc
        if self._served and not pn.state.loaded and doc is not None and doc.session_context:
            # (Called while the page loads, not through _apply again: the page counts as loaded
            # only after its onload callbacks.)
            with set_curdoc(doc):
                pn.state.onload(lambda: None if self._closed else fn(*args))
            return
        with pn.io.unlocked():
            fn(*args)

    def run_in_background(self, job, done, fail) -> None:
        """Executor for the state: run ``job`` in a thread, show progress, apply on the loop."""
        state = self.state

        async def run():
            started = time.monotonic()
            state.param.update(busy=True, elapsed=0.0)
            ticker = pn.state.add_periodic_callback(
                lambda: setattr(state, "elapsed", time.monotonic() - started), period=200
            )
            try:
                result = await asyncio.to_thread(job)
            except Exception as exc:
                self._apply(fail, exc)
            else:
                self._apply(done, result)  # the new figures, numbers and widgets in one message
            finally:
                ticker.stop()
                self._apply(
                    state.param.update, {"busy": False, "elapsed": time.monotonic() - started}
                )

        pn.state.execute(run)

    def in_background(self, job, done, fail) -> None:
        """Executor for the work that follows the numbers (every rule's tables, the evaluator's
        timing): a thread after a short pause, no spinner (the plots stay live). A job whose
        move a newer one replaced returns None at once (its own check)."""
        self._in_thread(job, done, fail, pause=MEASURE_PAUSE)

    def _in_thread(self, job, done, fail, *, pause: float) -> None:
        """Run ``job`` in a thread after ``pause`` seconds unless the session closed by then;
        ``done(result)`` or ``fail(exc)`` back on the session's thread."""

        async def run():
            if pause:
                await asyncio.sleep(pause)
            if self._closed:
                return
            try:
                result = await asyncio.to_thread(job)
            except Exception as exc:
                self._apply(fail, exc)
            else:
                self._apply(done, result)

        pn.state.execute(run)

    def serve_mode(self) -> None:
        """Switch to served behaviour: background training, tables and timing, and the URL
        holding the view. The tables and the timing the first page's state held start once the
        browser has loaded the page (its numbers), so that they do not delay sending it."""
        self.state.executor = self.run_in_background
        pn.state.onload(self._start_background)
        self._served = True
        server_log.install()  # a closed tab is not a traceback in the server log
        pn.state.on_session_destroyed(self._session_closed)
        self._notifications = pn.state.notifications
        if self._notifications is not None:
            # Top right, over the header's end: at the bottom right (Panel's default) a message
            # about a point clicked on the tradeoff plot covered that plot's axis for 15 s.
            self._notifications.position = NOTIFICATION_POSITION
        if pn.state.location is not None:
            self.sync_url(pn.state.location)

    def _fill_deferred(self) -> None:
        """Put the views :meth:`_deferred` held back into the page, in one change of the
        document: each view placed on its own made Bokeh walk the whole page's models again (four
        walks of ~1,000 models a page load). A view that cannot be drawn is told, in its place
        and as a notification, and the others still come (nothing escapes the document's
        freeze, which Bokeh would leave frozen)."""
        pending, self._pending = self._pending, []
        doc = pn.state.curdoc
        with doc.models.freeze() if doc is not None else contextlib.nullcontext():
            for holder, build in pending:
                try:
                    holder.objects = [build()]
                except Exception as exc:
                    self.state.report(exc)
                    holder.objects = [
                        pn.pane.Alert(
                            "This view could not be drawn (the notification says why); the "
                            "rest of the page works.",
                            alert_type="danger",
                        )
                    ]
                finally:
                    holder.loading = False

    def _start_background(self) -> None:
        self._loaded = True
        untold, self._untold = self._untold, []
        for text, level in held_back(untold):
            self._show(text, level)
        try:
            self.state.start_background(self.in_background)
        except Exception as exc:  # told; the held-back views still come (the next callback)
            self.state.report(exc)

    def _tell(self, message: str) -> None:
        """A warning (shown once the page has loaded: :meth:`_notify_error`)."""
        self.state.report(message, "warning")

    def sync_url(self, location) -> None:
        """Keep the page's URL and the state in step (``location`` is Panel's
        ``pn.state.location``).

        The URL is synced with a stand-in (:class:`UrlControls`) whose values are not checked,
        never with the state itself: whatever the URL says — on opening, or when the browser
        sends its address after connecting — reaches the state through its validation (snapped
        to the sliders' grids, reported once in the dashboard's words), and the URL is then set
        to what was applied. The stand-in holds each value as the location reads it back from
        the query it writes (:func:`url_value`), so an address that holds the state changes
        nothing and applies nothing."""
        self._location = location
        # None stays out of the first address (the location writes no query value for it).
        start = {k: getattr(self.state, k) for k in URL_PARAMETERS}
        self._url = UrlControls(**{k: url_value(v) for k, v in start.items() if v is not None})
        self._pushing = False
        self.state.param.watch(self._state_to_url, list(URL_PARAMETERS))
        self._url.param.watch(self._url_to_state, list(URL_PARAMETERS))
        location.sync(self._url, {p: p for p in URL_PARAMETERS})
        location.param.watch(self._address_set, "search")

    def _push(self, names) -> None:
        """The state's values of ``names`` into the URL."""
        values = {k: url_value(getattr(self.state, k)) for k in names}
        changed = {k: v for k, v in values.items() if getattr(self._url, k) != v}
        if changed:
            self._pushing = True
            try:
                self._url.param.update(changed)
            finally:
                self._pushing = False

    def _state_to_url(self, *events) -> None:
        self._push([e.name for e in events])

    def _url_to_state(self, *events) -> None:
        if self._pushing:
            return
        values = {e.name: e.new for e in events if e.new != url_value(getattr(self.state, e.name))}
        # The browser sends its address again as it connects (and may once more): a value of it
        # handled already (applied, snapped, or refused and told) is not handled again.
        values = {k: v for k, v in values.items() if self._handled.get(k) != _as_handled(v)}
        self._handled.update({k: _as_handled(v) for k, v in values.items()})
        if values.keys() & {"delta", "z"}:
            # δ and z are settled as the address holds them both (DashboardState.one_scale),
            # whichever of them differs from the state: the browser sends its address again.
            address = parse_query(self._location.search or "")
            values.update({k: address[k] for k in ("delta", "z") if k in address})
        if values:
            self._from_url(values)
        self._push([e.name for e in events])  # the URL says what was applied

    def _address_set(self, event) -> None:
        """An address that lacks the URL in use (the browser's, as it connects: a link with only
        ``?target=0.01``, a δ typed off the slider's grid) is answered with the URL in use on
        the next tick.

        Panel does not echo a property back while it handles the browser's change of it, so
        what the dashboard wrote into the address in the meantime (the rule applied, δ snapped)
        would never reach the address bar; after that handling, the location's ``search`` set
        or re-sent does. Compared as text, so the answer itself, which holds the URL in use,
        schedules nothing."""
        address = dict(parse_qsl(event.new.removeprefix("?"), keep_blank_values=True))
        if any(address.get(k) != v for k, v in self._url_query().items()):
            pn.state.execute(self._send_url, schedule=True)

    def _url_query(self) -> dict[str, str]:
        """The URL in use: the stand-in's values as the location writes them."""
        held = {k: getattr(self._url, k) for k in URL_PARAMETERS}
        return {
            k: v if isinstance(v, str) else json.dumps(v) for k, v in held.items() if v is not None
        }

    def _send_url(self) -> None:
        """The URL in use into the location's ``search``, sent to the browser (re-sent when the
        server held it already: the browser may not)."""
        if self._closed:
            return
        self._location.update_query(**self._url_query())
        self._location.param.trigger("search")

    def _from_url(self, query: dict) -> None:
        """Controls from the URL. Model inputs are applied together (one build); the rule's
        controls wait for that build when it runs in the background, so that they are checked
        against the new model (θ's range is the new scores'). Each value of an address comes
        here once (:meth:`_url_to_state`), so what it tells is told once."""
        told = self.state.n_errors  # (a value refused or changed is told: see picked below)
        dataset = query.get("dataset")
        if isinstance(dataset, str) and dataset.startswith(UPLOAD_PREFIX):
            # An uploaded file is not kept across a reload; the model's settings and the
            # thresholds in the address were the upload's (gamma=scale on its features, θ on
            # its scores), so the dataset shown keeps its own: applied to it, they trained
            # another model than the one its menu gives, without a word.
            dropped = sorted(k for k in query if k in UPLOAD_SETTINGS)
            for key in ("dataset", *dropped):
                del query[key]
            kept = f"{self.state.dataset} is shown with its own model settings"
            self._tell(
                f"{dataset[len(UPLOAD_PREFIX) :]} was an uploaded file, and uploads are not kept "
                f"when the page reloads: upload it again. Meanwhile {kept}"
                + (f" (the address's {', '.join(dropped)} were the upload's)." if dropped else ".")
            )
        elif query.get("model_source") == "upload":
            # Nor is an uploaded model: the dataset's trained model is shown instead, and the
            # address's θ (on the uploaded model's scores) is left out with it.
            dropped = sorted(k for k in query if k in ("model_source", "theta"))
            for key in dropped:
                del query[key]
            self._tell(
                "The model was an uploaded file, and uploads are not kept when the page reloads: "
                f"upload it again. Meanwhile {query.get('dataset', self.state.dataset)} is shown "
                "with its trained model"
                + (" (the address's theta was the upload's)." if "theta" in dropped else ".")
            )
        query, disagree = self.state.one_scale(query)
        if disagree is not None:
            self._tell(disagree)
        model = {k: v for k, v in query.items() if k in MODEL_INPUTS}
        rule = {k: v for k, v in query.items() if k not in MODEL_INPUTS}
        # An address with the rule a target or a time budget picked reopens that rule: picked
        # again, the target chose a sketched rule offered since (the address's mass-regression
        # at z = 0.84 reopened as sketched-heteroscedastic at z = 0.44). Only where the address
        # was taken as it is (nothing refused, snapped or dropped, the model built) and its rule
        # is one the pick picks (DashboardState.restore_pick); otherwise the pick picks.
        picked = {}
        if "boundary" in rule:
            picked = {k: rule.pop(k) for k in ("target", "time_budget") if k in rule}

        def apply_rule() -> None:
            if rule:
                self.state.set_controls(**rule)
            if picked and self.state.n_errors == told:
                self.state.restore_pick(**picked)
            elif picked:
                self.state.set_controls(**picked)

        if model:
            self.state.set_controls(**model)
        if (rule or picked) and self.state.building:

            def when_built(event) -> None:
                if not event.new:
                    self.state.param.unwatch(watcher)
                    apply_rule()

            watcher = self.state.param.watch(when_built, "busy")
        else:
            apply_rule()

    # -- layout ------------------------------------------------------------------------------
    def sidebar(self) -> list:
        return [
            pn.Row(self.indicator, self.status),
            Controls(state=self.state),
            ExportPanel(state=self.state),
        ]

    def main(self) -> list:
        s = self.state
        card = {"sizing_mode": "stretch_width", "height": 400, "min_width": 300}
        info = pn.pane.Markdown(
            pn.bind(lambda w: model_words(w, s.walks_dataset), s.param.walks),
            sizing_mode="stretch_width",
            margin=(0, 10),
            styles={"font-size": "12px", "line-height": "1.35"},
            stylesheets=[TIGHT],
            css_classes=["att-info"],
        )
        self._plots = [
            view(state=s)
            for view in (TrajectoryView, TradeoffView, PrecisionRecallView, TheoryView)
        ]
        # The walks plot comes with the page (the first plot in view); the others after it.
        plots = pn.FlexBox(
            *(
                pn.Column(
                    view if i == 0 or not self._served else self._deferred(view.__panel__),
                    **card,
                    styles={"flex": "1 1 460px"},
                )
                for i, view in enumerate(self._plots)
            ),
            sizing_mode="stretch_width",
        )
        tabs = pn.Tabs(
            (TABS[0], pn.Column(plots, FocusView(state=s), sizing_mode="stretch_width")),
            (
                TABS[1],
                pn.Column(
                    SketchNote(state=s),
                    OperatingPointTable(state=s),
                    SnippetView(state=s),
                    sizing_mode="stretch_width",
                ),
            ),
            (TABS[2], self._bridge_tab()),
            sizing_mode="stretch_width",
            dynamic=False,
            stylesheets=[TABS_CSS],
        )
        if self._served and pn.state.location is not None:
            self._sync_tab(pn.state.location, tabs)
        tour = Tour(state=s, tabs=tabs)
        info.styles = {**info.styles, "flex": "1 1 280px", "width": "auto", "min-width": "0"}
        intro = pn.FlexBox(tour.buttons(), info, align_items="center", sizing_mode="stretch_width")
        return [
            pn.Column(
                pn.pane.Markdown(INTRO, margin=(0, 10), stylesheets=[TIGHT]),
                intro,
                tour,
                HeadlineNumbers(state=s),
                CalibrationView(state=s),
                sizing_mode="stretch_width",
            ),
            tabs,
        ]

    def _sync_tab(self, location, tabs) -> None:
        """The active tab in the URL, by name (``?tab=pick``): a shared address opens on the tab
        it was copied from. A name that is no tab is reported (once, as the address's other
        values are), the first tab shown and the address answered with it."""
        url = TabUrl()

        def answer() -> None:
            # The address holds the tab shown, on the next tick (Panel does not echo a value
            # back while it handles the browser's change of it: _address_set).
            if not self._closed:
                url.tab = TAB_NAMES[tabs.active]
                location.update_query(tab=url.tab)
                location.param.trigger("search")

        def to_tabs(event) -> None:
            if event.new is None or event.new == TAB_NAMES[tabs.active]:
                return
            if event.new in TAB_NAMES:
                tabs.active = TAB_NAMES.index(event.new)
                return
            # Told once, as the address's other values are (_url_to_state): the browser sends
            # its address again as it connects.
            if self._handled.get("tab") != _as_handled(event.new):
                self._handled["tab"] = _as_handled(event.new)
                self._tell(
                    f"tab={event.new} is not a tab of the page; expected one of "
                    f"{', '.join(TAB_NAMES)}. The first is shown."
                )
            pn.state.execute(answer, schedule=True)

        def to_url(event) -> None:
            url.tab = TAB_NAMES[event.new]

        url.param.watch(to_tabs, "tab")
        tabs.param.watch(to_url, "active")
        location.sync(url, {"tab": "tab"})

    def _bridge_tab(self):
        """The teaching tab: its simulation and plots built after the page has loaded (served),
        off the path of the first numbers."""
        if not self._served:
            return BridgeTab()
        location = pn.state.location
        url = BridgeUrl()
        if location is not None:
            location.sync(url, BRIDGE_URL)

        def build():
            values, problems = bridge_url_values(url)
            for problem in problems:
                self._tell(problem)
            bridge_url_reset(url, values)  # (told once, not on each reload; snapped values shown)
            tab = BridgeTab(**values)
            tab.follow(url)
            return tab.__panel__()

        return self._deferred(build, sizing_mode="stretch_width")

    def _deferred(self, build, sizing_mode: str = "stretch_both"):
        """A holder that ``build()`` fills once the browser has loaded the page (served), so
        the numbers show first (:meth:`_fill_deferred`)."""
        holder = pn.Column(sizing_mode=sizing_mode, loading=True)
        self._pending.append((holder, build))
        if len(self._pending) == 1:
            # (After _start_background, whose work waits in threads. Where no page is to load,
            # a script's document, Panel calls it at once: the holder is filled here.)
            pn.state.onload(self._fill_deferred)
        return holder

    def template(self) -> pn.template.FastListTemplate:
        """The served page: a template with the sidebar, light/dark theme toggle."""
        asked = _query_theme()
        if asked is not None and theme_name(asked) is None:
            self._tell(f"theme={asked} is not a theme of the page; expected dark or light.")
        template = DashboardTemplate(
            title=TITLE,
            # (with the component that keeps the controls' moves out of the browser's history)
            sidebar=[*self.sidebar(), AddressInPlace()],
            main=self.main(),
            sidebar_width=330,
            accent_base_color=COLORS["attentive"],
            header_background="#3b3b58",
            theme_toggle=True,
            main_layout=None,
            collapsed_sidebar=False,
            raw_css=[RESPONSIVE_CSS],
            design=OfflineFast,
            meta_viewport=META_VIEWPORT,
        )
        return template

    def _repr_mimebundle_(self, include=None, exclude=None):
        """In a notebook: the dashboard with its stylesheets from this machine. Its scripts and
        first stylesheets are inline (``build_dashboard(inline=True)``); a component drawn later
        (a plot redrawn, the tour's card) takes its stylesheets from the document's
        ``dist_url``, which would be Panel's CDN: the Jupyter server serves the same files
        (Panel's server extension, ``/panel_dist/``)."""
        bundle = super()._repr_mimebundle_(include, exclude)
        for view in self._plots:
            doc = getattr(getattr(view, "_fig", None), "document", None)
            if doc is not None:
                doc.template_variables.setdefault("dist_url", NOTEBOOK_DIST)
        return bundle

    def __panel__(self):
        # In a notebook: the same content without the page template; the page keeps the kernel's
        # own changes to itself, and they reach it in the order they were made (attentive.app.comm).
        send_in_order()
        return pn.Row(
            pn.Column(*self.sidebar(), KernelChangesStay(), width=330),
            pn.Column(*self.main(), sizing_mode="stretch_width"),
            sizing_mode="stretch_width",
            min_height=1100,
        )


def build_dashboard(
    served: bool | None = None, inline: bool | None = None, **state_params
) -> Dashboard:
    """A new dashboard (one per session), loading the extensions it needs.

    Parameters
    ----------
    served : bool, optional
        Use background training and the URL (default: whether Panel is serving).
    inline : bool, optional
        Embed Bokeh's and Panel's scripts in a notebook's output (default: in a notebook, yes;
        served, Panel serves them itself): the dashboard then renders without internet.
    **state_params
        Initial controls, e.g. ``dataset="breast-cancer", delta=0.01``.
    """
    served = pn.state.served if served is None else served
    _extension(inline=(not served) if inline is None else inline)
    # Served, the first numbers are computed here and sent with the page; the evaluator's timing
    # and every rule's tradeoff wait for serve_mode() and run in threads after that.
    dash = Dashboard(state=DashboardState(hold_background=served, **state_params))
    if served:
        dash.serve_mode()
    return dash
