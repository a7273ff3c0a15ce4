// privamp serve: shows the fields of the chosen sampler source and the progress of a
// request. Part of privamp (Apache-2.0); no library, no build step.
(function () {
  "use strict";
  var form = document.getElementById("run");
  var source = document.getElementById("f-source");
  function showSource() {
    var v = source ? source.value : "sampler";
    document.querySelectorAll(".src").forEach(function (el) {
      el.hidden = !el.classList.contains("src-" + v);
    });
  }
  if (source) { source.addEventListener("change", showSource); showSource(); }
  var mech = document.getElementById("f-mechanism");
  function showMechanism() {
    var v = mech.value;
    ["sigma", "scale", "theta"].forEach(function (name) {
      var box = document.getElementById("box-" + name);
      var need = {gaussian: "sigma", laplace: "scale", rr: "theta"}[v];
      if (box) { box.hidden = name !== need; }
    });
  }
  if (mech) { mech.addEventListener("change", showMechanism); showMechanism(); }
  if (form) {
    form.addEventListener("submit", function () {
      // send only the fields that are filled (a short shareable URL)
      form.querySelectorAll("input, select").forEach(function (el) {
        if (el.value === "" || el.closest("[hidden]")) { el.disabled = true; }
      });
      var box = document.getElementById("progress");
      var bar = document.getElementById("bar");
      var text = document.getElementById("progress-text");
      var t0 = Date.now();
      box.hidden = false;
      setInterval(function () {
        var s = (Date.now() - t0) / 1000;
        bar.value = s;
        text.textContent = "working: " + s.toFixed(0) + " s";
      }, 250);
    });
  }
})();
