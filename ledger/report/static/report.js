(function () {
  "use strict";
  /* Runs in <head>, before the body is parsed: it marks the page (the style then
     shows the filters and sort arrows) and listens on the document. It touches
     no row until asked, so it adds nothing to the page's load. */
  var doc = document;
  doc.documentElement.setAttribute("data-js", "on");
  function rowsOf(table) {
    var out = [];
    for (var b = 0; b < table.tBodies.length; b++) {
      var rows = table.tBodies[b].rows;
      for (var k = 0; k < rows.length; k++) { out.push(rows[k]); }
    }
    return out;
  }
  function sortBy(th) {
    var table = th.closest("table");
    var i = th.cellIndex;
    var num = th.classList.contains("n");
    var asc = th.getAttribute("aria-sort") !== "ascending";
    var heads = th.parentNode.cells;
    for (var h = 0; h < heads.length; h++) { heads[h].removeAttribute("aria-sort"); }
    th.setAttribute("aria-sort", asc ? "ascending" : "descending");
    var keyed = rowsOf(table).map(function (row, k) {
      var text = row.cells[i] ? row.cells[i].textContent : "";
      var v = num ? parseFloat(text) : text.toLowerCase();
      if (num && isNaN(v)) { v = -Infinity; }
      return [v, k, row];
    });
    keyed.sort(function (x, y) {
      if (x[0] < y[0]) { return asc ? -1 : 1; }
      if (x[0] > y[0]) { return asc ? 1 : -1; }
      return x[1] - y[1];
    });
    /* Refill each block with as many rows as it had. */
    var bodies = Array.prototype.slice.call(table.tBodies);
    var sizes = bodies.map(function (b) { return b.rows.length; });
    var next = 0;
    bodies.forEach(function (body, j) {
      var frag = doc.createDocumentFragment();
      for (var m = 0; m < sizes[j]; m++) { frag.appendChild(keyed[next++][2]); }
      body.appendChild(frag);
    });
  }
  var texts = new WeakMap();
  function filter(box) {
    var table = doc.getElementById(box.getAttribute("data-for"));
    if (!table) { return; }
    var heads = table.tHead.rows[0].cells;
    var wants = [];
    Array.prototype.forEach.call(box.querySelectorAll("select[data-col]"), function (s) {
      for (var i = 0; i < heads.length; i++) {
        if (heads[i].getAttribute("data-key") === s.getAttribute("data-col") && s.value) {
          wants.push([i, s.value]);
        }
      }
    });
    var search = box.querySelector("input");
    var q = search ? search.value.trim().toLowerCase() : "";
    var rows = rowsOf(table);
    var shown = 0;
    rows.forEach(function (row) {
      var ok = true;
      for (var j = 0; j < wants.length && ok; j++) {
        var cell = row.cells[wants[j][0]];
        ok = !!cell && cell.textContent === wants[j][1];
      }
      if (ok && q) {
        var t = texts.get(row);
        if (t === undefined) { t = row.textContent.toLowerCase(); texts.set(row, t); }
        ok = t.indexOf(q) !== -1;
      }
      row.hidden = !ok;
      if (ok) { shown++; }
    });
    var count = box.querySelector(".count");
    if (count) { count.textContent = shown + " of " + rows.length + " rows shown"; }
  }
  function sortable(target) {
    return target && target.closest ? target.closest("table[data-sortable] > thead th") : null;
  }
  doc.addEventListener("click", function (ev) {
    var th = sortable(ev.target);
    if (th) { sortBy(th); }
  });
  doc.addEventListener("keydown", function (ev) {
    var th = sortable(ev.target);
    if (th && (ev.key === "Enter" || ev.key === " ")) { ev.preventDefault(); sortBy(th); }
  });
  function onFilter(ev) {
    var box = ev.target && ev.target.closest ? ev.target.closest(".filters[data-for]") : null;
    if (box) { filter(box); }
  }
  doc.addEventListener("input", onFilter);
  doc.addEventListener("change", onFilter);
})();
