// The report page's behaviour: tabs, selecting a violated property, stepping through its
// counterexample (source lines and CFA edges highlighted, values shown). No libraries.
"use strict";
(function () {
  var errors = document.getElementById("errors");
  window.addEventListener("error", function (e) {
    errors.hidden = false;
    errors.textContent += "script error: " + e.message + "\n";
    document.body.setAttribute("data-errors", "true");
  });
  var data = JSON.parse(document.getElementById("cpals-data").textContent);
  var state = { prop: -1, step: -1 };

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function lineEl(n) { return document.getElementById("L" + n); }

  // Tabs.
  var buttons = document.querySelectorAll(".tabs button");
  function showTab(name) {
    buttons.forEach(function (b) { b.classList.toggle("active", b.getAttribute("data-tab") === name); });
    document.querySelectorAll(".tab").forEach(function (t) { t.hidden = t.id !== "tab-" + name; });
  }
  buttons.forEach(function (b) { b.addEventListener("click", function () { showTab(b.getAttribute("data-tab")); }); });

  // Functions in the CFA tab.
  var fsel = document.getElementById("fsel");
  function showFunction(name) {
    document.querySelectorAll(".cfa-fig").forEach(function (f) {
      var on = f.getAttribute("data-name") === name;
      f.hidden = !on;
      if (on) fsel.value = f.getAttribute("data-func");
    });
  }
  fsel.addEventListener("change", function () {
    var opt = fsel.options[fsel.selectedIndex];
    showFunction(opt.textContent);
  });
  var mainFn = data.functions.filter(function (f) { return f.name === "main"; })[0] || data.functions[0];
  if (mainFn) showFunction(mainFn.name);

  function clearMarks() {
    document.querySelectorAll(".line.onpath, .line.current").forEach(function (l) { l.classList.remove("onpath", "current"); });
    document.querySelectorAll(".vals").forEach(function (v) { v.textContent = ""; });
    document.querySelectorAll("svg.cfa .edge.onpath, svg.cfa .edge.current").forEach(function (g) { g.classList.remove("onpath", "current"); });
  }

  function edgesAt(s) {
    // The two branches of a condition share its position: pick the one the step took.
    var branch = s.kind === "branch" ? '[data-branch="' + s.branch + '"]' : "";
    return document.querySelectorAll('svg.cfa .edge[data-line="' + s.line + '"][data-col="' + s.column + '"]' + branch);
  }

  function describe(s) {
    var t = s.text;
    if (s.kind === "branch") t += s.branch ? "  [true]" : "  [false]";
    return t;
  }

  function selectProp(i) {
    var p = data.properties[i];
    state.prop = i;
    document.querySelectorAll("tr.prop").forEach(function (r) { r.classList.toggle("selected", +r.getAttribute("data-prop") === i); });
    clearMarks();
    var steps = document.getElementById("steps");
    steps.textContent = "";
    var hint = document.getElementById("cex-hint");
    var inputs = document.getElementById("inputs");
    inputs.textContent = "";
    if (!p.trace.length) {
      hint.textContent = p.verdict === "false" ? "This property has no trace." : "Line " + p.line + ": " + p.message + ".";
      document.getElementById("current").textContent = "";
      document.getElementById("stepno").textContent = "–";
      state.step = -1;
      var l = lineEl(p.line);
      if (l) l.classList.add("current");
      return;
    }
    hint.textContent = "Line " + p.line + ": " + p.message + ". Steps from the program's entry to the violation:";
    p.trace.forEach(function (s, k) {
      if (s.line > 0) {
        var le = lineEl(s.line);
        if (le) le.classList.add("onpath");
        edgesAt(s).forEach(function (g) { g.classList.add("onpath"); });
      }
      var li = el("li");
      li.appendChild(el("span", "loc", s.line > 0 ? s.line + ":" + s.column + "  " : ""));
      li.appendChild(document.createTextNode(describe(s)));
      if (s.values.length) {
        li.appendChild(el("span", "val", "   " + s.values.map(function (kv) { return kv[0] + " = " + kv[1]; }).join(", ")));
      }
      li.style.marginLeft = Math.min(s.depth, 8) * 10 + "px";
      li.addEventListener("click", function () { go(k); });
      steps.appendChild(li);
    });
    if (p.inputs) {
      inputs.textContent = p.inputs.length
        ? "Inputs in order (what `cpals check --harness` replays): " + p.inputs.map(function (x) { return x[0] + "() = " + x[1]; }).join(", ")
        : "The counterexample reads no input.";
    }
    go(p.trace.length - 1);
  }

  function go(k) {
    var p = data.properties[state.prop];
    if (!p || !p.trace.length) return;
    k = Math.max(0, Math.min(p.trace.length - 1, k));
    state.step = k;
    document.querySelectorAll(".line.current").forEach(function (l) { l.classList.remove("current"); });
    document.querySelectorAll("svg.cfa .edge.current").forEach(function (g) { g.classList.remove("current"); });
    document.querySelectorAll(".vals").forEach(function (v) { v.textContent = ""; });
    var items = document.querySelectorAll("#steps li");
    items.forEach(function (li, j) { li.classList.toggle("current-step", j === k); });
    var s = p.trace[k];
    var cur = document.getElementById("current");
    cur.textContent = "";
    cur.appendChild(el("div", "", "Step " + (k + 1) + " of " + p.trace.length + (s.line > 0 ? ", line " + s.line + " in " + s.function : "") + ": " + describe(s)));
    if (s.values.length) {
      var t = el("table");
      s.values.forEach(function (kv) {
        var tr = el("tr");
        tr.appendChild(el("td", "", kv[0]));
        tr.appendChild(el("td", "", kv[1]));
        t.appendChild(tr);
      });
      cur.appendChild(t);
    }
    if (s.input) cur.appendChild(el("div", "hint", "input: " + s.input[0] + "() returned " + s.input[1]));
    document.getElementById("stepno").textContent = (k + 1) + " / " + p.trace.length;
    if (s.line > 0) {
      var le = lineEl(s.line);
      if (le) {
        le.classList.add("current");
        var vals = le.querySelector(".vals");
        if (vals && s.values.length) vals.textContent = "// " + s.values.map(function (kv) { return kv[0] + " = " + kv[1]; }).join(", ");
        var box = document.getElementById("source");
        box.scrollTop = Math.max(0, le.offsetTop - box.offsetTop - box.clientHeight / 2);
      }
      edgesAt(s).forEach(function (g) { g.classList.add("current"); });
      if (s.function) showFunction(s.function);
    }
    if (items[k]) {
      var list = document.getElementById("cex");
      var top = items[k].offsetTop - list.offsetTop;
      if (top < list.scrollTop || top > list.scrollTop + list.clientHeight - 40) list.scrollTop = Math.max(0, top - 80);
    }
  }

  document.getElementById("prev").addEventListener("click", function () { go(state.step - 1); });
  document.getElementById("next").addEventListener("click", function () { go(state.step + 1); });
  document.addEventListener("keydown", function (e) {
    if (e.key === "n" || e.key === "ArrowDown") go(state.step + 1);
    if (e.key === "p" || e.key === "ArrowUp") go(state.step - 1);
  });
  document.querySelectorAll("tr.prop").forEach(function (r) {
    r.addEventListener("click", function () { selectProp(+r.getAttribute("data-prop")); });
  });

  // Start on the first violated property, if any.
  var first = -1;
  data.properties.forEach(function (p, i) { if (first < 0 && p.verdict === "false" && p.trace.length) first = i; });
  if (first >= 0) selectProp(first);
  // `report.html#tab-cfa` (or `#tab-facts`) opens that tab.
  var fromHash = location.hash.replace(/^#tab-/, "");
  if (fromHash === "cfa" || fromHash === "facts") {
    showTab(fromHash);
    window.scrollTo(0, 0);
  }
  document.body.setAttribute("data-ready", "true");
})();
