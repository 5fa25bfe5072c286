// citadel's only script: loaded from /static under a CSP without inline scripts.
// Without it every page still works: the ask form posts and the answer page loads whole.
"use strict";

(function () {
  // Server fragments become nodes through DOMParser: scripts in it never run (and the CSP
  // forbids inline ones anyway). The fragments are the server's own escaped templates.
  function nodes(html) {
    var doc = new DOMParser().parseFromString(html, "text/html");
    return Array.prototype.slice.call(doc.body.childNodes);
  }

  function replaceWith(target, html) {
    target.replaceChildren.apply(target, nodes(html));
  }

  function message(target, text) {
    var p = document.createElement("p");
    p.className = "error";
    p.setAttribute("role", "alert");
    p.textContent = text;
    target.replaceChildren(p);
  }

  // Server-sent events from a fetch body: "event: name\ndata: json\n\n" blocks.
  function readEvents(response, onEvent) {
    var reader = response.body.getReader();
    var decoder = new TextDecoder();
    var buffer = "";
    function pump() {
      return reader.read().then(function (chunk) {
        if (chunk.done) {
          return;
        }
        buffer += decoder.decode(chunk.value, { stream: true });
        var end;
        while ((end = buffer.indexOf("\n\n")) >= 0) {
          var block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          var name = "message";
          var data = "";
          block.split("\n").forEach(function (line) {
            if (line.indexOf("event: ") === 0) {
              name = line.slice(7);
            } else if (line.indexOf("data: ") === 0) {
              data += line.slice(6);
            }
          });
          if (data) {
            onEvent(name, JSON.parse(data));
          }
        }
        return pump();
      });
    }
    return pump();
  }

  function streamAnswers(form) {
    var result = document.getElementById("result");
    var button = form.querySelector("button[type=submit]");
    if (!result || !window.fetch || !window.DOMParser || !window.TextDecoder) {
      return;
    }
    form.addEventListener("submit", function (event) {
      if (form.dataset.plain === "1") {
        return; // the fallback: an ordinary post
      }
      event.preventDefault();
      button.disabled = true;
      button.textContent = "Searching…";
      result.setAttribute("aria-busy", "true");
      var home = document.querySelector("section.home");
      if (home) {
        home.hidden = true; // the home page's overview gives way to the answer
      }
      var answer = null;
      var permalink = null;
      fetch(form.dataset.stream, {
        method: "POST",
        body: new FormData(form),
        credentials: "same-origin",
        headers: { Accept: "text/event-stream" },
      })
        .then(function (response) {
          var type = response.headers.get("content-type") || "";
          if (response.status === 422) {
            return response.text().then(function (html) {
              replaceWith(result, html);
            });
          }
          if (!response.ok || type.indexOf("text/event-stream") !== 0) {
            throw new Error("no stream");
          }
          return readEvents(response, function (name, data) {
            if (name === "search") {
              permalink = data.permalink;
              button.textContent = "Checking the answer…";
              replaceWith(result, data.pending + data.html);
              answer = result.querySelector("section.answer");
            } else if (name === "answer" || name === "degraded") {
              permalink = data.permalink;
              var fresh = nodes(data.html);
              if (answer) {
                answer.replaceWith.apply(answer, fresh);
              } else {
                result.prepend.apply(result, fresh);
              }
              // The passages again: numbered as the footnotes, the cited ones marked (or,
              // for not_in_library, labelled as the closest passages, not evidence).
              var evidence = result.querySelector("section.evidence");
              if (data.evidence && evidence) {
                evidence.replaceWith.apply(evidence, nodes(data.evidence));
              }
            } else if (name === "error") {
              message(result, data.message || "The answer failed; try again.");
            }
          });
        })
        .then(function () {
          if (permalink && window.history && history.pushState) {
            history.pushState(null, "", permalink);
          }
        })
        .catch(function () {
          // Anything unexpected: send the form the plain way (it answers without a script).
          form.dataset.plain = "1";
          form.submit();
        })
        .finally(function () {
          button.disabled = false;
          button.textContent = "Ask";
          result.removeAttribute("aria-busy");
        });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    // The viewer: bring the cited span into view.
    var cited = document.getElementById("cited");
    if (cited) {
      cited.scrollIntoView({ block: "center" });
    }
    var ask = document.getElementById("ask-form");
    if (ask) {
      // Ctrl+Enter (or Cmd+Enter) in the question asks.
      ask.addEventListener("keydown", function (event) {
        if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
          event.preventDefault();
          if (ask.requestSubmit) {
            ask.requestSubmit();
          } else {
            ask.submit();
          }
        }
      });
      streamAnswers(ask);
      // Back and forward between streamed answers: load the page the address names.
      window.addEventListener("popstate", function () {
        window.location.reload();
      });
    }
    // Uploads (the library's form, a source's new version): sent by XMLHttpRequest so the
    // bar shows the bytes sent; the page the server answers with replaces <main>. Without
    // this script the plain form posts and the same page loads whole.
    document.addEventListener("submit", function (event) {
      var form = event.target;
      if (!(form instanceof HTMLFormElement) || !form.hasAttribute("data-upload")) {
        return;
      }
      if (!window.XMLHttpRequest || !window.FormData) {
        return;
      }
      event.preventDefault();
      var button = form.querySelector("button[type=submit]");
      var bar = form.querySelector("progress.upload-progress");
      if (button) {
        button.disabled = true;
        button.textContent = "Uploading…";
      }
      if (bar) {
        bar.hidden = false;
        bar.value = 0;
      }
      var xhr = new XMLHttpRequest();
      xhr.open("POST", form.getAttribute("action"));
      xhr.upload.addEventListener("progress", function (e) {
        if (bar && e.lengthComputable && e.total > 0) {
          bar.value = Math.round((100 * e.loaded) / e.total);
        }
      });
      xhr.upload.addEventListener("load", function () {
        if (bar) {
          bar.value = 100;
        }
        if (button) {
          button.textContent = "Ingesting…";
        }
      });
      xhr.addEventListener("load", function () {
        var doc = new DOMParser().parseFromString(xhr.responseText, "text/html");
        var main = doc.querySelector("main");
        var here = document.querySelector("main");
        if (main && here) {
          here.replaceWith(document.adoptNode(main));
          document.title = doc.title;
          window.history.pushState(null, "", form.getAttribute("action"));
        } else {
          window.location.assign(form.getAttribute("action"));
        }
      });
      xhr.addEventListener("error", function () {
        if (button) {
          button.disabled = false;
          button.textContent = "Upload failed: try again";
        }
      });
      xhr.send(new FormData(form));
    });
  });
})();
