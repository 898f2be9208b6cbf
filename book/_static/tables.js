/* On a phone the book's CSS (book.css, max-width 600px) shows each row of a wide markdown
 * table as a card, every cell after its column's name, as it does the claims tables. This
 * writes that name, the header cell's text, on each cell (data-label). Without it the cells
 * still stack, unnamed. Checked at 390 px by tests/test_browser.py. */
document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("table.table").forEach((table) => {
    const head = table.querySelector("thead tr");
    if (!head) return;
    const names = [...head.children].map((th) => th.textContent.trim());
    table.querySelectorAll("tbody tr").forEach((row) => {
      [...row.children].forEach((cell, i) => {
        if (!cell.hasAttribute("data-label")) cell.setAttribute("data-label", names[i] || "");
      });
    });
    table.classList.add("attn-stack");
  });
});
