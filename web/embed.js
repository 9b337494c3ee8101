/*
 * aitp's chat on a shop's own website, with one tag (docs/embed.md):
 *
 *   <script src="https://<aitp>/embed.js" data-shop="<shop id>" data-session-url="/chat/session" async></script>
 *
 * It puts an <iframe src="https://<aitp>/embed.html?shop=<shop id>"> right after the tag (or into the element
 * `data-target` selects), as wide as its container and `data-height` tall (default min(640px, 85vh)). When the
 * chat in the frame says "aitp:ready" (or later "aitp:session-needed"), it POSTs to `data-session-url` on this
 * page's own origin (the shop's backend, which knows its customer by its own cookie and asks aitp for a customer
 * session) and posts the answer's key to the frame, to aitp's origin alone. The key is never put in a URL.
 * With `data-anonymous`, visitors not signed in chat too (when the shop lets them in): the frame then asks aitp
 * for a visitor's session itself, and names it (`upgrade_from`) in its next request, which this script passes
 * on to the shop's backend in the body, so that the visitor's conversation becomes the customer's once signed in.
 * The page says its customer signed in without leaving with `document.dispatchEvent(new Event("aitp:signed-in"))`.
 * No dependencies, no globals.
 */
(() => {
  const script = document.currentScript;
  if (!script) return;
  const shop = script.dataset.shop;
  const sessionUrl = script.dataset.sessionUrl;
  if (!shop || !sessionUrl) {
    console.error("aitp embed: the script tag needs data-shop and data-session-url.");
    return;
  }
  const aitp = new URL(script.src).origin;
  const route = new URL(sessionUrl, location.href);
  if (route.origin !== location.origin) {
    console.error("aitp embed: data-session-url must be on this page's own origin.");
    return;
  }

  const anonymous = script.dataset.anonymous !== undefined;
  const height = script.dataset.height;
  const frame = document.createElement("iframe");
  frame.src = `${aitp}/embed.html?shop=${encodeURIComponent(shop)}`;
  frame.title = script.dataset.title || "Chat"; // named after the shop once the chat knows its name
  frame.style.cssText = "display:block;width:100%;max-width:100%;border:0;";
  frame.style.height = sizeOf(height) || "min(640px, 85vh)";

  let asking = null; // one request to the shop's backend at a time

  window.addEventListener("message", (event) => {
    if (event.source !== frame.contentWindow || event.origin !== aitp) return;
    const type = event.data && event.data.type;
    if (type === "aitp:ready" || type === "aitp:session-needed") {
      const upgradeFrom = typeof event.data.upgrade_from === "string" ? event.data.upgrade_from : null;
      asking = asking || askSession(upgradeFrom).finally(() => (asking = null));
    } else if (type === "aitp:title" && typeof event.data.title === "string") {
      frame.title = event.data.title.slice(0, 200);
    }
  });

  // the page's customer signed in without leaving the page: a visitor's chat becomes the customer's
  document.addEventListener("aitp:signed-in", () => {
    if (frame.contentWindow) frame.contentWindow.postMessage({ type: "aitp:renew" }, aitp);
  });

  const target = script.dataset.target && document.querySelector(script.dataset.target);
  if (target) target.append(frame);
  else script.after(frame);

  /** The shop's answer as the frame's message; its key goes to aitp's origin and nowhere else. */
  async function askSession(upgradeFrom) {
    let message;
    try {
      const response = await fetch(route, {
        method: "POST",
        credentials: "same-origin",
        // a JSON body: a request another site cannot make without this origin's consent (CORS preflight)
        headers: { "Content-Type": "application/json", Accept: "application/json" },
        // a visitor's key, for the backend to name when it asks for its customer's session
        body: JSON.stringify(upgradeFrom ? { upgrade_from: upgradeFrom } : {}),
      });
      const answer = response.ok ? await response.json() : null;
      message =
        answer && typeof answer.key === "string" && typeof answer.expires_at === "number"
          ? { type: "aitp:session", key: answer.key, expires_at: answer.expires_at }
          : { type: "aitp:session-failed", status: response.ok ? 502 : response.status, anonymous };
    } catch {
      message = { type: "aitp:session-failed", status: 0, anonymous };
    }
    if (frame.contentWindow) frame.contentWindow.postMessage(message, aitp);
  }

  /** `data-height` as CSS: a number is pixels; any other valid length as written; else null. */
  function sizeOf(value) {
    if (!value) return null;
    const css = /^\d+(\.\d+)?$/.test(value.trim()) ? `${value.trim()}px` : value.trim();
    return CSS.supports("height", css) ? css : null;
  }
})();
