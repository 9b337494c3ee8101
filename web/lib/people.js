/**
 * The people of the threads: each actor's profile (GET /v1/threads/{id}/profiles), so the UI shows a
 * display name and an avatar instead of an actor id. Actors without a profile show their id, and an avatar
 * of their initial.
 */

import { h } from "./dom.js";
import { safeImageUrl } from "./urls.js";

export class People {
  constructor(api) {
    this.api = api;
    this.profiles = new Map(); // actor id -> profile
    this.loaded = new Map(); // thread id -> promise
    this.listeners = new Set();
  }

  /** Call `fn(actors)` whenever profiles arrive, with the ids of those that changed. */
  onChange(fn) {
    this.listeners.add(fn);
  }

  /** Load the profiles of thread `id`'s actors (once; `again` reloads). Resolves when known. */
  load(threadId, again = false) {
    if (!again && this.loaded.has(threadId)) return this.loaded.get(threadId);
    const loading = this.api("GET", `/threads/${encodeURIComponent(threadId)}/profiles`)
      .then((list) => {
        const changed = new Set();
        for (const profile of list.data) {
          const known = this.profiles.get(profile.actor);
          if (!known || known.updated_at !== profile.updated_at) changed.add(profile.actor);
          this.profiles.set(profile.actor, profile);
        }
        if (changed.size) for (const fn of [...this.listeners]) fn(changed);
      })
      .catch((error) => {
        this.loaded.delete(threadId); // try again next time
        console.warn("Could not load the profiles of a thread", error);
      });
    this.loaded.set(threadId, loading);
    return loading;
  }

  set(profile) {
    this.profiles.set(profile.actor, profile);
    for (const fn of [...this.listeners]) fn(new Set([profile.actor]));
  }

  profile(actor) {
    return this.profiles.get(actor) ?? null;
  }

  /** The name people see: the display name, else the actor id. */
  name(actor) {
    return this.profiles.get(actor)?.display_name || actor;
  }

  /** A decorative avatar (the name is always written next to it). */
  avatar(actor, size = "medium") {
    const url = safeImageUrl(this.profiles.get(actor)?.avatar_url);
    if (url) return h("img", { class: `avatar avatar-${size}`, src: url, alt: "", "aria-hidden": "true" });
    const name = this.name(actor);
    const initial = (name.match(/[\p{L}\p{N}]/u)?.[0] ?? "?").toUpperCase();
    return h(
      "span",
      { class: `avatar avatar-${size} avatar-initial`, "aria-hidden": "true", style: `--hue: ${hue(actor)}` },
      initial,
    );
  }
}

function hue(text) {
  let value = 0;
  for (const char of text) value = (value * 31 + char.codePointAt(0)) % 360;
  return value;
}
