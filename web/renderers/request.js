// The life of a request card (request_decision, request_data, quote): who may answer it, in
// which negotiated version, and the moment it is answered — by this user or anyone else — after
// which its controls are disabled and it says who answered. A request whose lifecycle goes on after
// an answer (a quote: a failed payment may be retried) says where it stands instead (`follow`).
import { h } from "../lib/dom.js";
import { alertRegion, statusNote, submitting } from "./feedback.js";
import { replySchema } from "./schema.js";
import { actorOf, watchAnswer, watchThread, capitalized, whoIs } from "./thread.js";

/**
 * Wire a request card: appends `controls` (a <fieldset>, disabled while the user cannot answer),
 * an alert region and the notes that say why to `root`.
 *
 * `answer` is the reply's message type, whose body names the request as `body[key] === id`.
 * With `follow(messages)` → `{open, text, kind}` the card follows the request's lifecycle instead of
 * closing at the first answer: controls are enabled while `open` (and the user may answer), and the
 * note says `text` (none when empty).
 * `onAnswered(body)` is called with the answer once there is one (e.g. to show what was chosen).
 * Returns `{alert, send(body), sendFrom(button, body)}`: `send` posts the reply in the negotiated
 * version and rejects with the server's error (or a local Error saying why not); `sendFrom` does so
 * with `button` busy and shows a refusal in the card's alert.
 */
export function requestLifecycle(ctx, message, { root, controls, capability, answer, key, id, verb, describe, follow, onAnswered }) {
  const alert = alertRegion();
  const notes = h("div", { class: "aitp-notes" });
  root.append(controls, alert.node, notes);
  const note = (text, kind) => notes.replaceChildren(statusNote(text, kind));

  const gate = replySchema(ctx, capability);
  let why = null; // why this user cannot answer at all, whatever the request's state
  if (actorOf(message) === ctx.me) {
    why = ["Sent by you: waiting for an answer."];
  } else if (gate.reason) {
    why = [gate.reason, "warning"];
  }
  if (why) {
    controls.disabled = true;
    note(...why);
  }

  const report = follow
    ? watchThread(ctx, (messages) => {
        const now = follow(messages);
        controls.disabled = Boolean(why) || !now.open;
        root.dataset.answered = String(!now.open);
        if (now.text) note(now.text, now.kind);
        else if (why) note(...why);
        else notes.replaceChildren();
      })
    : watchAnswer(ctx, [answer], key, id, ({ message: answered, body }) => {
        controls.disabled = true;
        root.dataset.answered = "true";
        const detail = describe ? describe(body) : "";
        note(`${capitalized(whoIs(ctx, actorOf(answered)))} ${verb ?? "answered"}${detail ? `: ${detail}` : ""}`, "done");
        if (onAnswered) onAnswered(body);
      });

  const send = async (body) => {
    const schema = replySchema(ctx, capability); // read again: the table may have changed since rendering
    if (!schema.url) throw new Error(schema.reason);
    const posted = await ctx.post(JSON.stringify({ $schema: schema.url, [answer]: body }));
    report(posted); // the accepted post may beat its own live echo
    return posted;
  };
  return { alert, note, send, sendFrom: (button, body) => submitting(button, alert, () => send(body)) };
}
