// citadel's only script: loaded from /static under a CSP without inline scripts.
"use strict";

document.addEventListener("DOMContentLoaded", function () {
  // The viewer: bring the cited span into view.
  var cited = document.getElementById("cited");
  if (cited) {
    cited.scrollIntoView({ block: "center" });
  }
  // Long-running forms: one submission at a time, and say that work is under way.
  ["ask-form", "upload-form"].forEach(function (id) {
    var form = document.getElementById(id);
    if (!form) {
      return;
    }
    form.addEventListener("submit", function () {
      var button = form.querySelector("button[type=submit]");
      if (button) {
        button.disabled = true;
        button.textContent = id === "ask-form" ? "Asking…" : "Ingesting…";
      }
    });
  });
});
