"""What the dashboard's state does after the numbers, through its background executor: every
rule's tables (tradeoff, times), the evaluator's timing at the current rule, and the walk's sketch
on demand (SPEC §3b) with the rule a sketched control asks for.

:class:`Background` is the part of :class:`attentive.app.state.DashboardState` that runs this
work through :attr:`~Background.background` (inline by default, a thread after a short pause when
served; ``None`` holds it until :meth:`~Background.start_background`, so the served first page
sends its numbers first; what is cached, tables and a timing kept for the rule, is shown at once,
on that page too). It uses the state's :meth:`~attentive.app.state.DashboardState.report`
and ``building``. A result is applied only if the controls still ask for it.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import param

from attentive.app import controls, rules, sketches
from attentive.app.controls import Controls

__all__ = ["MEASURE_RETRIES", "MEASURE_RETRY_PAUSE", "Background"]

#: An unsteady timing is taken again this many times, each after this many seconds. On a machine
#: that stays busy each timing is three attempts of 7 rounds (rules.steady_times): with two
#: retries, the browser tests (Chromium beside the server) ran 9:59 against 8:31 before.
MEASURE_RETRIES = 1
MEASURE_RETRY_PAUSE = 2.0


class Background(Controls):
    """The tables, the timing and the sketch of the state's walk (see the module's docstring)."""

    background: Callable | None = None
    _measure_token: object = None  # the latest _measure call's (its timings apply, not older)

    # -- the rule, with or without the walk's sketch ------------------------------------------------
    def _rule_of(self, sketch, **values) -> rules.Rule:
        """The rule the controls (or ``values`` in their place) ask for with ``sketch``: a
        sketched rule without its sketch is, until the sketch is in, its family on the walk."""
        c = {k: values.get(k, getattr(self, k)) for k in controls.RULE_INPUTS}
        kind = c["boundary"]
        if rules.is_sketched(kind) and not (sketch is not None and sketch.pays):
            kind = rules.base_family(kind)
        z = c["z"] if kind in rules.scaled_kinds() else None
        return rules.Rule(kind, c["side"], c["delta"], c["theta"], c["budget"], c["alpha"], z)

    def _refused(self, sketch) -> dict:
        """A sketched rule asked for where ``sketch`` says none pays: the reason reported, and
        its family to put back in the control (nothing otherwise)."""
        if not rules.is_sketched(self.boundary) or sketch is None or sketch.pays:
            return {}
        self.report(f"{self.boundary} is not available: {sketch.reason}: {sketch.detail}", "warning")  # fmt: skip
        return {"boundary": rules.base_family(self.boundary)}

    # -- the sketch, on demand ---------------------------------------------------------------------
    @property
    def sketched(self) -> bool:
        """Whether the walk in use has a sketch that pays (its sketched rules are shown)."""
        return self.sketch is not None and self.sketch.pays

    @param.depends("boundary", "walks", watch=True)
    def _sketch_wanted(self) -> None:
        if rules.is_sketched(self.boundary) and not self.building:
            self.fit_sketch()

    def fit_sketch(self) -> None:
        """Fit the sketch of the walk in use through :attr:`background` (a few seconds; once per walk,
        then cached), unless it is known or being fitted; then a sketched rule asked for meanwhile
        applies, or is put back with the reason where none pays."""
        w = self.walks
        if w is None or self.sketch is not None or self.sketching is w:
            return
        if self.background is None:
            return  # started with the background (served: once the page has loaded)
        self.sketching = w

        def done(sketch) -> None:
            if self.sketching is w:
                self.sketching = None
            if self.walks is w and self.sketch is None:
                put_back = self._refused(sketch)
                self.param.update(sketch=sketch, rule=self._rule_of(sketch, **put_back), **put_back)  # fmt: skip

        def fail(exc) -> None:
            if self.sketching is w:
                self.sketching = None
            self.report(exc)

        self.background(lambda: sketches.sketch(w), done, fail)

    # -- the tables and the timing, after the numbers ---------------------------------------------
    @param.depends("walks", "side", "theta", "sketch", watch=True)
    def _tables_changed(self) -> None:
        """Every rule's tradeoff, then its times, for this walk, side and θ — then the same with
        the sketched rules where the walk has a sketch: cached, or computed through
        :attr:`background`; the timing at the current rule follows the times."""
        if self.walks is None:
            return
        key = (self.walks, self.side, self.theta)
        steps = [
            (name, fn, sketched)
            for sketched in sorted({False, self.sketched})
            for name, fn in (("tradeoff", rules.tradeoff), ("times", rules.rule_times))
        ]
        # What is cached, the sketched tables over the plain ones.
        shown = {name: v for name, fn, sk in steps if (v := fn.peek(*key, sk)) is not None}
        self.param.update(tradeoff=shown.get("tradeoff"), times=shown.get("times"))
        todo = [step for step in steps if step[1].peek(*key, step[2]) is None]
        if self.background is None:
            return
        asked = (*key, self.sketch)

        def run(i: int) -> None:
            if i == len(todo) or (self.walks, self.side, self.theta, self.sketch) != asked:
                return
            name, fn, sketched = todo[i]

            def done(value) -> None:
                if (self.walks, self.side, self.theta, self.sketch) == asked:
                    setattr(self, name, value)
                    if name == "times":
                        self._measure()
                    run(i + 1)

            self.background(lambda: fn(*key, sketched), done, self.report)

        run(0)

    @param.depends("walks", "rule", watch=True)
    def _measure(self) -> None:
        """Time the evaluator at the current rule once every rule's times are in (a timing taken
        while another thread times every rule measures the contention). A timing that came out
        unsteady (:attr:`rules.Measurement.steady`: the first one of a page is often taken
        while the server draws it) is taken again, :data:`MEASURE_RETRIES` times at most, after
        :data:`MEASURE_RETRY_PAUSE` seconds each, the card saying "timing…" meanwhile; the last
        is shown whatever it is. A timing kept for this walk and rule (:func:`rules.measure`:
        steady, and recent) is shown at once, on the first page too."""
        self.measured = None
        # Each call starts its own chain of timings; an older one (a move away and back, or the
        # call the tables' arrival makes) stops at its next step.
        token = self._measure_token = object()
        w, rule = self.walks, self.rule
        if w is None:
            return

        def current() -> bool:
            return self._measure_token is token and (self.walks, self.rule) == (w, rule)

        def job(retry: int):
            if retry and current():
                time.sleep(MEASURE_RETRY_PAUSE)
            if not current():
                return None  # a newer move came first: nobody will see this timing
            return rules.measure(w, rule)

        def done(result, retry: int = 0) -> None:
            if result is None or not current():
                return
            if not result.steady and retry < MEASURE_RETRIES:
                self.background(lambda: job(retry + 1), lambda r: done(r, retry + 1), self.report)
                return
            self.measured = result
            budget = self.time_budget
            # (Only for the rule the budget picked: a move away, whose timing may come before
            # the move has cleared the budget, is the user's rule.)
            if budget is not None and self.still_picked() and result.us_per_example > budget:
                # The rule a time budget picked, timed as the card times it, over that budget:
                # said, not left for the card and the table to contradict each other.
                self.report(
                    f"The rule picked for {budget:g} µs per example measures "
                    f"{result.us_per_example:.3g} µs on the card: the pick timed it before the "
                    "page redrew, the card times it beside full evaluation as the page redraws, "
                    f"and timings move on a busy machine. To stay within {budget:g} µs on the "
                    "card, type a lower budget.",
                    "warning",
                )

        kept = rules.measure.peek(w, rule)
        # (Before the page has loaded, a warning would not show: a time budget's waits for it.)
        if kept is not None and (self.background is not None or self.time_budget is None):
            return done(kept)
        if self.background is None:
            return
        if rules.rule_times.peek(w, rule.side, rule.theta, self.sketched) is None:
            return  # started again when the tables arrive
        self.background(lambda: job(0), done, self.report)

    def start_background(self, executor: Callable) -> None:
        """Start the tables and the timing with ``executor`` (served: once the page has loaded)."""
        self.background = executor
        self._tables_changed()
        if self.measured is None:  # unless the tables came at once, or a kept timing is shown
            self._measure()
        self._sketch_wanted()
