"""A lesson a lecturer can click through: the paper's view of the method in one click, and a guided
tour whose steps each set the controls, open a tab and say what to look at.

The steps are data (:data:`STEPS`); the view only shows the current one and applies its controls
through :meth:`DashboardState.set_controls`. A new step is one more :class:`Step` in
:data:`STEPS`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import panel as pn
import param
from panel.custom import JSComponent

from attentive.app import controls
from attentive.app.numbers import SLOWER_WARNING
from attentive.app.state import DashboardState

__all__ = ["PAPER_VIEW", "SKETCHED_VIEW", "STEPS", "TABS", "Step", "Tour"]

# The paper's setting: its rule (Constant-STST), one side, the walks of S_t with the Brownian
# bridge the rule assumes, on a dataset where δ visibly trades error for terms (synthetic:
# δ = 5 % evaluates 97 % of the terms at 0.7 % stop-error, δ = 50 % 71 % at 30 %).
# Each step sets the permutation seed too: its words are about what the default order shows (a
# user's seed 5 made the first step's stop-error 26 %, "⚠ above δ = 20 %").
TOUR_SEED = 0
PAPER_VIEW = {
    "seed": TOUR_SEED,
    "dataset": "synthetic",
    "boundary": "constant",
    "side": "lower",
    "centering": "positive",
    "theta": 0.0,
    "delta": 0.2,
}
# Where a sketch of the score pays, quickly (its 100 features lie near a 3-dimensional subspace;
# there it pays most): a sketched rule at δ = 2 % works 0.11 of a full evaluation at 1.75 %
# stop-error, the plain curved rule at δ = 1 % 0.86 at 3.75 % (docs/app.md). At δ = 1 % the
# sketched rule's 1.25 % came with "⚠ above δ" in the step that shows it off.
SKETCHED_VIEW = {
    "seed": TOUR_SEED,
    "dataset": "synthetic-lowrank",
    "boundary": "sketched-curved",
    "side": "both",
    "delta": 0.02,
}
# Tabs of the main area, by position, and their titles.
WALKS_TAB, PICK_TAB, BRIDGE_TAB = 0, 1, 2
TABS = ("Walks and rules", "Pick a threshold", "Brownian bridge")


@dataclass(frozen=True)
class Step:
    """One step of the tour: what to read, the controls it sets and the tab it opens."""

    title: str
    text: str
    controls: dict = field(default_factory=dict)
    tab: int = WALKS_TAB


STEPS = (
    Step(
        "The walk",
        "A linear predictor's score f(x) = c + S_n(x) is a sum of n terms. Attentive prediction "
        "adds them in a random order: each line on the **walks plot** is one test example's "
        "partial score S_t after t terms, blue where the full evaluation says negative, "
        "vermillion where it says positive. Walks far from the decision threshold head for "
        "their side early; those near it wander until late, and on this generated problem "
        "many are near it.",
        PAPER_VIEW,
    ),
    Step(
        "The boundary",
        "The dashed pink line is the paper's Constant-STST boundary τ (Theorem 1). A walk that "
        "falls below it stops (×) and is called negative: the remaining terms are never "
        "evaluated. The grey band is the spread (± z·sd at each t, z = Φ⁻¹(1 − δ)) of the "
        "Brownian bridge the boundary assumes for a walk that ends at the decision threshold; "
        "the boundary lies beyond it, because such a walk may cross at any t, and τ bounds the "
        "chance that it does anywhere. Click a stop (×) to see that example below the plots.",
        PAPER_VIEW,
    ),
    Step(
        "δ against error",
        "δ is the stop-error the boundary is built for. Here δ = 50 %: the boundary moves up, "
        "more walks stop, fewer terms are evaluated — and more of the stopped ones would have "
        "been positive. Move the δ slider in the sidebar and watch the **mean terms** and the "
        "**stop-error** cards trade against each other; the star on the tradeoff plot moves "
        "along the constant family's curve.",
        {**PAPER_VIEW, "delta": 0.5},
    ),
    Step(
        "The bridge theory",
        "Simulated walks with a drift, stopping at τ(δ): the required δ against the actual "
        "error, and the mean stopping time growing like √n (Theorem 2) — the paper's Figure 3. "
        "Move the drift, n and δ sliders of this tab.",
        tab=BRIDGE_TAB,
    ),
    Step(
        "Beyond the paper: the calibrated rule",
        "On real data (MNIST 2 vs 5) the calibrated rule picks the cheapest boundary family and "
        "its scale on examples held out from training, so that the disagreement with the full "
        "model is at most δ with probability at least 1 − α: the green box states the "
        "guarantee and the family chosen. (Where that is mass-regression, "
        "which stops on its estimate of S_n from S_t and the running mass A_t, the walks plot "
        "draws that estimate instead of S_t.)",
        {
            "seed": TOUR_SEED,
            "dataset": "mnist-t10k-2v5",
            "boundary": "calibrated",
            "side": "both",
            "delta": 0.01,
        },
    ),
    Step(
        "Beyond the paper: the sketched walk",
        "A **sketched rule** first computes a cheap sketch of every term for the whole row (a "
        "Nyström sketch of the RBF kernel on a few principal directions and landmarks: a few % "
        "of a full evaluation), then walks only the residuals — what the sketch got wrong, the "
        "support vectors it gets most wrong on the training rows first — starting at the "
        "sketch's score F̃(x). On the **walks plot** each walk now starts, at "
        "t = 0, near where it ends, and most cross the boundary within a few terms; on the "
        "**tradeoff plot** the dashed sketched curves, whose cost includes the sketch, lie left "
        "of the plain ones. The sketch is fitted when asked for (a few seconds; the sidebar says "
        "when it is in). This generated problem, whose 100 features lie near a 3-dimensional "
        "subspace, is the case a sketch is made for; where none can be fitted (a linear model, "
        "another kernel, sparse rows) or none pays, the sidebar says why. The **wall-clock** "
        f"card may say that {SLOWER_WARNING}: full evaluation of these 400 rows of 100 features "
        "takes under a millisecond, less than a walk's fixed costs per call. The time "
        "saved shows on large problems (MNIST 8 against the rest: `predict` in 0.5–0.8 of a "
        "full evaluation's time on one thread, docs/speed.md).",
        SKETCHED_VIEW,
    ),
    Step(
        "Pick a threshold",
        "The engineer's view: every family at every scale on the test set, with its time per "
        "example. Type a target disagreement (or a time budget in µs per example) and press "
        "Enter, or click a row; the highlighted row is the rule in use, and the snippet "
        "reproduces it in Python.",
        # (δ as the calibrated step's: the sketched step before it left 2 %.)
        {
            "seed": TOUR_SEED,
            "dataset": "mnist-t10k-2v5",
            "boundary": "calibrated",
            "side": "both",
            "delta": 0.01,
        },
        tab=PICK_TAB,
    ),
)


class CardIntoView(JSComponent):
    """Nothing to see: drawn just above the tour's card, a new :attr:`scroll` value scrolls the
    main area so that the card is at the top of the window, with the plots its words are about
    under it (below the intro and the buttons, the card pushed the walks plot under the fold at
    1440 × 900). In the page from the start: a custom model first sent later is not
    registered in the browser."""

    scroll = param.Integer(default=0)

    _esm = """
    export function render({ model, el }) {
      // After the new step's card is drawn: a scroll under way when the old card goes is
      // cut short (the phone's second step stopped 240 px short).
      model.on('scroll', () => setTimeout(
        () => el.scrollIntoView({ behavior: 'smooth', block: 'start' }), 250));
    }
    """


#: The controls the tour keeps when it starts and sets again when it closes: every input of the
#: model and of the rule (its steps change the dataset, the rule and the seed; a user's
#: uploaded file and model stay in the dashboard's lists meanwhile).
KEPT = controls.MODEL_INPUTS + controls.RULE_INPUTS
#: And what picked the rule (a target or a time budget: the tour's first rule clears them), set
#: back as an address sets them, without picking again where the rule is the one they pick.
PICKS = ("target", "time_budget")
RESTORED = "The tour is closed: your dataset, model and rule are back as they were before it."


class Tour(pn.viewable.Viewer):
    """The tour's card: the current step's title and text, Back / Next / Close. Opening a step
    sets its controls and shows its tab (``tabs``, the main area's :class:`pn.Tabs`). Closing it
    (Close the tour, or Done) sets again what the user had when it started (:data:`KEPT`, and the
    tab): a user's uploaded dataset and rule were left for the tour's last step without a word
    (a user's trial)."""

    state = param.ClassSelector(class_=DashboardState)
    tabs = param.ClassSelector(class_=pn.Tabs)
    step = param.Integer(default=-1, bounds=(-1, len(STEPS) - 1), doc="-1: the tour is closed.")

    def __init__(self, **params):
        super().__init__(**params)
        self._kept: dict | None = None  # the user's controls when the tour started
        self._kept_tab: int | None = None

    def start(self, event=None) -> None:
        if self.step < 0:
            self._kept = {name: getattr(self.state, name) for name in (*KEPT, *PICKS)}
            self._kept_tab = None if self.tabs is None else self.tabs.active
            self.state.touring = True
        self.step = 0
        self._show()  # again if already at the first step

    def paper_view(self, event=None) -> None:
        old = self.state.dataset
        self.state.set_controls(**PAPER_VIEW)
        if self.tabs is not None:
            self.tabs.active = WALKS_TAB
        if old != self.state.dataset and old.startswith(controls.UPLOAD_PREFIX):
            name = old.removeprefix(controls.UPLOAD_PREFIX)
            self.state.report(
                f"Paper view shows the paper's setting on {self.state.dataset}; your {name} is "
                "still in the Dataset list.",
                "info",
            )

    @param.depends("step", watch=True)
    def _show(self) -> None:
        if self.step < 0:
            self._restore()
            return
        step = STEPS[self.step]
        if step.controls:
            self.state.set_controls(**step.controls)
        if self.tabs is not None:
            self.tabs.active = step.tab

    def _restore(self) -> None:
        """Set again the controls kept when the tour started (those the tour changed), and say
        so where they all took (a model that fails to build again is reported as such)."""
        kept, self._kept = self._kept, None
        self.state.touring = False
        if kept is None:
            return
        picks = {k: v for k in PICKS if (v := kept.pop(k)) is not None}
        changed = {k: v for k, v in kept.items() if getattr(self.state, k) != v}
        if changed:
            # The model's inputs as the state held them (an uploaded model's file among them,
            # which no field sets), in one update: one build; then the rule, as set_controls
            # sets a rule beside a build.
            self.state.param.update(
                {k: v for k, v in changed.items() if k in controls.MODEL_INPUTS}
            )
            rule = {k: v for k, v in changed.items() if k not in controls.MODEL_INPUTS}
            if rule:
                self.state.set_controls(**rule)
        if self.tabs is not None and self._kept_tab is not None:
            self.tabs.active = self._kept_tab

        def finish() -> None:
            # Once the model is built (served, it builds in the background): the pick that chose
            # the rule, as an address sets it back, and the word that all is back — not where
            # the build failed and the page stayed on the tour's model.
            if picks and all(getattr(self.state, k) is None for k in PICKS):
                self.state.restore_pick(**picks)
            if changed and all(getattr(self.state, k) == v for k, v in kept.items()):
                self.state.report(RESTORED, "info")

        self.state.when_built(finish)

    @param.depends("step")
    def _card(self):
        if self.step < 0:
            return pn.Spacer(height=0)
        step = STEPS[self.step]
        back = pn.widgets.Button(name="◀ Back", disabled=self.step == 0, width=90)
        last = self.step == len(STEPS) - 1
        forward = pn.widgets.Button(
            name="Done" if last else "Next ▶", button_type="primary", width=90
        )
        close = pn.widgets.Button(name="Close the tour", button_type="light", width=120)
        back.on_click(lambda e: setattr(self, "step", self.step - 1))
        forward.on_click(lambda e: setattr(self, "step", -1 if last else self.step + 1))
        close.on_click(lambda e: setattr(self, "step", -1))
        return pn.Column(
            pn.pane.Markdown(
                f"**Guided tour, step {self.step + 1} of {len(STEPS)}: {step.title}**\n\n"
                f"{step.text}",
                margin=(0, 10),
                css_classes=["att-tour-text"],
            ),
            pn.Row(back, forward, close),
            css_classes=["att-tour"],
            styles={"border": "2px solid #CC79A7", "border-radius": "6px", "padding": "4px"},
            sizing_mode="stretch_width",
        )

    def buttons(self) -> pn.Row:
        """The two ways in: the paper's view in one click, and the tour."""
        tour = pn.widgets.Button(
            name="Guided tour", button_type="primary", css_classes=["att-tour-start"], width=130
        )
        paper = pn.widgets.Button(
            name="Paper view", button_type="primary", button_style="outline",
            css_classes=["att-paper-view"], width=130,
        )  # fmt: skip
        tour.on_click(self.start)
        paper.on_click(self.paper_view)
        return pn.Row(tour, paper, margin=(0, 0), sizing_mode="fixed", width=290, height=44)

    def __panel__(self):
        into_view = CardIntoView(height=0, margin=0, sizing_mode="stretch_width")
        self.param.watch(
            lambda event: (
                setattr(into_view, "scroll", into_view.scroll + 1) if event.new >= 0 else None
            ),
            "step",
        )
        return pn.Column(
            into_view,
            pn.panel(self._card, sizing_mode="stretch_width"),
            margin=0,
            sizing_mode="stretch_width",
        )
