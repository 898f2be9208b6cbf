"""What a reader sees on a built chapter page, measured in the browser (shared by
tests/test_browser.py and scripts/page_check.py).

Each constant is a JavaScript function expression: pass it to a page's ``evaluate``.
"""

#: Display equations wider than the column they sit in (MathJax 3 CHTML): a list of
#: {over: px hidden, tex: the start of its text}. The column is the cell or paragraph's
#: content box; an equation that scrolls inside its own box counts too (no visible cue).
OVERFLOWING_EQUATIONS = r"""
() => {
  const out = [];
  for (const e of document.querySelectorAll('mjx-container[display="true"]')) {
    const math = e.querySelector('mjx-math');
    if (!math) continue;
    const box = (e.closest('div.math, .math-wrapper, p, li, dd, td, section') || e.parentElement);
    const cs = getComputedStyle(box);
    const inner = box.getBoundingClientRect().width - parseFloat(cs.paddingLeft)
                  - parseFloat(cs.paddingRight);
    const w = math.getBoundingClientRect().width;
    if (w > inner + 1) out.push({over: Math.round(w - inner),
                                 tex: (e.getAttribute('data-tex') || e.textContent).slice(0, 60)});
  }
  return out;
}
"""

#: Output blocks (printed text) wider than the column: {over: px, text: first line}.
OVERFLOWING_OUTPUTS = r"""
() => {
  const out = [];
  for (const pre of document.querySelectorAll('.cell_output pre, div.output pre')) {
    if (pre.closest('details:not([open])')) continue;   // folded: not on the page
    if (pre.scrollWidth > pre.clientWidth + 1) {
      const lines = pre.textContent.split('\n');
      const longest = lines.reduce((a, b) => (b.length > a.length ? b : a), '');
      out.push({over: pre.scrollWidth - pre.clientWidth, text: longest.slice(0, 90)});
    }
  }
  return out;
}
"""

#: Controls a reader can move that nothing behind the page answers: every slider, dropdown,
#: text box or button rendered by ipywidgets outside a kernel-free figure slider.
DEAD_CONTROLS = r"""
() => {
  const sel = '.widget-slider, .widget-dropdown, .widget-text, .widget-button, '
            + '.widget-toggle-button, .widget-checkbox, .widget-radio, .widget-play';
  const out = [];
  for (const w of document.querySelectorAll(sel)) {
    if (w.closest('.attn-figure-slider')) continue;
    const r = w.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;     // not rendered (e.g. in a fold)
    const cell = w.closest('.cell');
    out.push({control: w.className.slice(0, 60),
              cell: cell ? (cell.textContent || '').trim().slice(0, 60) : ''});
  }
  return out;
}
"""

#: Images in outputs: displayed width / natural width (how much the page shrinks them).
IMAGE_SCALES = r"""
() => [...document.querySelectorAll('.cell_output img')]
  .filter(i => i.naturalWidth > 0 && i.getBoundingClientRect().width > 0)
  .map(i => Math.round(100 * i.getBoundingClientRect().width / i.naturalWidth) / 100)
"""
