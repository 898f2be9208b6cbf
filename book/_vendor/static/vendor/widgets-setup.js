// Hand-written glue for ipywidgets' static HTML manager (embed-amd.js) in this book.
// Loaded after require.js and before embed-amd.js (see nb_ipywidgets_js in _config.yml).
(function () {
  "use strict";
  var script = document.currentScript;

  // 1. Where embed-amd.js finds its own assets.
  // It derives the URL of the Font Awesome fonts shipped next to it from the require.js
  // module id "@jupyter-widgets/html-manager/dist/libembed-amd"; unmapped, that id resolves
  // relative to the *page* (e.g. notebooks/@jupyter-widgets/...) and the fonts 404. Map it
  // to the vendored copy, computed from this script's own URL so it works at any depth.
  if (script && window.requirejs) {
    var here = script.src.replace(/[?#].*$/, "").replace(/\/[^\/]*$/, "");
    window.requirejs.config({
      paths: { "@jupyter-widgets/html-manager/dist": here + "/jupyter-widgets" },
    });
  }

  // 2. MathJax 3 for widget labels.
  // The widgets typeset their descriptions with the MathJax 2 call
  // MathJax.Hub.Queue(["Typeset", MathJax.Hub, element]); the book ships MathJax 3, which has
  // no Hub, so every widget render threw "Cannot read properties of undefined (reading
  // 'Queue')". Provide that one call on top of MathJax 3's typesetPromise.
  function typeset(element) {
    var MJ = window.MathJax;
    if (!MJ || !MJ.startup || !MJ.startup.promise || !element) {
      return;
    }
    MJ.startup.promise = MJ.startup.promise
      .then(function () {
        return MJ.typesetPromise ? MJ.typesetPromise([element]) : null;
      })
      .catch(function (err) {
        console.warn("MathJax could not typeset a widget label:", err);
      });
  }
  function installHubShim() {
    var MJ = window.MathJax;
    if (MJ && MJ.version && String(MJ.version).charAt(0) !== "2" && !MJ.Hub) {
      MJ.Hub = {
        Queue: function () {
          for (var i = 0; i < arguments.length; i++) {
            var cmd = arguments[i];
            if (Array.isArray(cmd) && cmd[0] === "Typeset") {
              typeset(cmd[2]);
            }
          }
        },
      };
    }
  }
  // MathJax 3 is a deferred script: it has replaced window.MathJax by DOMContentLoaded, and
  // this listener is registered before embed-amd.js registers its own.
  document.addEventListener("DOMContentLoaded", installHubShim);
})();
