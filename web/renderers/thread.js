// Reading the thread a renderer lives in: message payloads, the request an answer names, the
// answer a request got (already in the thread, or arriving live).

/** The JSON object a text part carries, or null. */
export function payloadOf(part) {
  const raw = part && part.text ? part.text.value : null;
  if (typeof raw !== "string") return null;
  try {
    const value = JSON.parse(raw);
    return value && typeof value === "object" && !Array.isArray(value) ? value : null;
  } catch {
    return null;
  }
}

/** The actor who wrote a message. */
export function actorOf(message) {
  return (message && ((message.metadata && message.metadata.actor) || message.actor || message.role)) || "someone";
}

/** Every (message, type, body) of capability parts in `messages`, body being payload[type]. */
export function* capabilityParts(messages) {
  for (const message of messages) {
    for (const part of (message && message.content) || []) {
      const payload = payloadOf(part);
      if (!payload) continue;
      for (const [type, body] of Object.entries(payload)) {
        if (type !== "$schema" && body && typeof body === "object") yield { message, type, body, part };
      }
    }
  }
}

/** The first part of `type` whose body[key] equals `id`: {message, body, part}, or null. */
export function findPart(messages, type, key, id) {
  for (const found of capabilityParts(messages)) {
    if (found.type === type && String(found.body[key]) === String(id)) return found;
  }
  return null;
}

/**
 * Call `onChange(messages)` with the thread's messages now and again whenever one arrives. Returns a
 * `report(message)` for the renderer's own accepted post, which may beat its live echo.
 */
export function watchThread(ctx, onChange) {
  if (typeof ctx.onMessage === "function") ctx.onMessage(() => onChange(ctx.messages()));
  onChange(ctx.messages());
  return (message) => {
    const messages = ctx.messages();
    onChange(messages.some((known) => known.id === message.id) ? messages : [...messages, message]);
  };
}

/**
 * Call `onAnswered({message, body})` once, with the first message answering request `id` (a part
 * of one of `types` naming it in `key`), whether it is already in the thread or arrives later.
 */
export function watchAnswer(ctx, types, key, id, onAnswered) {
  let done = false;
  let unsubscribe = null;
  const check = (messages) => {
    if (done) return;
    for (const type of types) {
      const found = findPart(messages, type, key, id);
      if (found) {
        done = true;
        if (unsubscribe) unsubscribe();
        onAnswered(found);
        return;
      }
    }
  };
  check(ctx.messages());
  if (!done && typeof ctx.onMessage === "function") {
    unsubscribe = ctx.onMessage((message) => check([message]));
  }
  // the renderer also reports its own accepted post, which may beat the live echo
  return (message) => check([message]);
}

/** Who `actor` is, in words: "you" for the signed-in actor, else its display name (or id). */
export function whoIs(ctx, actor) {
  if (actor === ctx.me) return "you";
  return ctx.people ? ctx.people.name(actor) : actor;
}

/** `whoIs` at the start of a sentence: "You" (a name or an id is left as it is spelt). */
export function capitalized(who) {
  return who === "you" ? "You" : who;
}

/**
 * `actor` named with what the server checked about it ("Sunny Socks · sunnysocks.example ✓", or an
 * "unverified" tag): for rows that name a person (a payee, a payer). "you" for the signed-in actor; the
 * plain name where the app gives no people (the renderers also run without it).
 */
export function labelOf(ctx, actor) {
  if (actor === ctx.me || !ctx.people || typeof ctx.people.label !== "function") return whoIs(ctx, actor);
  return ctx.people.label(actor, { me: ctx.me });
}

/** Whether the server verified `actor` (a domain or a NEAR account); never without the app's people. */
export function isVerified(ctx, actor) {
  return Boolean(ctx.people && typeof ctx.people.verified === "function" && ctx.people.verified(actor));
}
