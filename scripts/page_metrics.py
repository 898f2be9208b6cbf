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

#: The size of every display equation's text against the page's: a dict with ``text``, the
#: computed font size of the article's paragraphs (px), ``inline``, the median size of the
#: inline maths in those paragraphs (MathJax scales its font so that its x-height matches the
#: text's: about 1.27 times the paragraph's size with the book's fonts), and ``equations``, a
#: list of {size: the display equation's mjx-math font size (px), tex: its start}. A stylesheet
#: that shrinks display maths (the 85 % phone rule this book once had) lowers ``size`` against
#: both references. Folded equations (in a closed dropdown) are measured too: a computed style
#: does not need a layout.
DISPLAY_EQUATION_SIZES = r"""
() => {
  const article = document.querySelector('article.bd-article, main, body');
  const para = [...article.querySelectorAll('p')].find(p => p.textContent.trim().length > 40)
               || article;
  const px = e => parseFloat(getComputedStyle(e).fontSize);
  const inline = [...article.querySelectorAll('p mjx-container:not([display="true"]) mjx-math')]
    .map(px).sort((a, b) => a - b);
  return {
    text: px(para),
    inline: inline.length ? inline[Math.floor(inline.length / 2)] : null,
    equations: [...document.querySelectorAll('mjx-container[display="true"]')].map(e => {
      const math = e.querySelector('mjx-math') || e;
      return {size: px(math), tex: (e.getAttribute('data-tex') || e.textContent).slice(0, 60)};
    }),
  };
}
"""

#: Open every closed dropdown (folded answers, hints, solutions) so that what is inside is laid
#: out and can be measured; returns how many were opened. CLOSE_FOLDS closes them again.
OPEN_FOLDS = r"""
() => {
  const shut = [...document.querySelectorAll('details:not([open])')];
  shut.forEach(d => { d.open = true; d.setAttribute('data-attn-opened', ''); });
  return shut.length;
}
"""
CLOSE_FOLDS = r"""
() => {
  const opened = [...document.querySelectorAll('details[data-attn-opened]')];
  opened.forEach(d => { d.open = false; d.removeAttribute('data-attn-opened'); });
  return opened.length;
}
"""

#: Every claims table's cells (``table.attn-claims``, attn_core/claims.py) that a reader cannot
#: see whole without scrolling sideways, and the cells shown without their column's name: a
#: dict {tables, cells: how many non-empty cells were checked, hidden: [...], unnamed: [...]}.
#: A cell is hidden when it is not rendered (display/visibility/opacity), when its box reaches
#: past the right edge of the column it sits in (the output area's content box, itself inside
#: the window) or starts left of it, or when it clips its own text. A cell is named when its
#: column's header is shown above it (a table that fits) or when it shows its data-label
#: itself (the book's phone layout, book/_static/book.css); the statement and the verdict
#: (✓/✗) read without a name.
CLAIMS_CELLS = r"""
() => {
  const tables = [...document.querySelectorAll('table.attn-claims')];
  const out = {tables: tables.length, cells: 0, hidden: [], unnamed: []};
  for (const [n, t] of tables.entries()) {
    const box = t.closest('.cell_output, .output') || t.parentElement;
    const b = box.getBoundingClientRect(), cs = getComputedStyle(box);
    const left = Math.max(0, b.left + box.clientLeft + parseFloat(cs.paddingLeft));
    const right = Math.min(window.innerWidth,
                           b.left + box.clientLeft + box.clientWidth - parseFloat(cs.paddingRight));
    const heads = [...t.querySelectorAll('thead th')];
    const headShown = h => { const r = h.getBoundingClientRect();
                             return r.width > 0 && r.left >= left - 1 && r.right <= right + 1; };
    for (const td of t.querySelectorAll('tbody td')) {
      const text = td.textContent.trim();
      if (!text) continue;
      out.cells += 1;
      const label = td.getAttribute('data-label') || '';
      const what = {table: n, label: label, text: text.slice(0, 40)};
      const r = td.getBoundingClientRect(), s = getComputedStyle(td);
      const why = [];
      if (!td.getClientRects().length || r.width === 0 || s.visibility !== 'visible'
          || parseFloat(s.opacity) < 0.5) why.push('not shown');
      else {
        if (r.right > right + 1) why.push(`right edge ${Math.round(r.right)} > ${Math.round(right)}`);
        if (r.left < left - 1) why.push(`left edge ${Math.round(r.left)} < ${Math.round(left)}`);
        if (td.scrollWidth > td.clientWidth + 1) why.push('clips its text');
      }
      if (why.length) out.hidden.push({...what, why: why.join(', ')});
      if (label === 'statement' || label === 'held') continue;
      const head = heads[td.cellIndex];
      const before = getComputedStyle(td, '::before').content;
      const named = (head && headShown(head) && head.textContent.trim() === label)
                    || (label && before.includes(label));
      if (!named) out.unnamed.push(what);
    }
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
