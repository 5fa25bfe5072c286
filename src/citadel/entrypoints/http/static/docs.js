// /docs: Swagger UI over this server's /openapi.json. Loaded as a file, never inline,
// so the page runs under the site's Content-Security-Policy (script-src 'self').
"use strict";
window.addEventListener("DOMContentLoaded", function () {
  const root = document.getElementById("swagger-ui");
  if (root === null || typeof window.SwaggerUIBundle !== "function") {
    return;
  }
  window.ui = window.SwaggerUIBundle({
    url: root.dataset.spec,
    domNode: root,
    deepLinking: true,
    layout: "BaseLayout",
    presets: [window.SwaggerUIBundle.presets.apis],
    // No validator badge: it would send the document to another origin.
    validatorUrl: null,
    tryItOutEnabled: false,
    persistAuthorization: false,
  });
});
