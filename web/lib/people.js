/**
 * The people of the threads: each actor's profile (GET /v1/threads/{id}/profiles), so the UI shows a
 * display name and an avatar instead of an actor id. Actors without a profile show their id, and an avatar
 * of their initial.
 *
 * A display name is what an account says about itself: anyone can call itself "Sunny Socks". What the
 * server has checked is the profile's `verification` (a domain that publishes the account's keys, or a
 * NEAR account that signed in with its key). So every name the UI shows goes with that identifier
 * (`badge`, `label`): "Sunny Socks · sunnysocks.example ✓", or an "unverified" tag.
 *
 * The chat a shop embeds in its own website (`brandOnly: {shop}`) shows the shop's brand alone: the shop and its
 * agents (`<shop>/…`) by name, with no identifier and no mark, and taken as verified (the customer is on the
 * shop's own website, and the session was made with the shop's key); the customer is "You". Anyone else is named
 * and marked as everywhere.
 */

import { h } from "./dom.js";
import { safeImageUrl } from "./urls.js";

const NOT_VERIFIED = "not verified: this name is what the account says about itself";
const IMPLICIT_NEAR = /^[0-9a-f]{64}$/;

/** "3f2a…9c1d" for a 64-hex NEAR implicit account (unreadable whole), else the identifier as it is. */
export function shortIdentifier(identifier) {
  return IMPLICIT_NEAR.test(identifier) ? `${identifier.slice(0, 4)}…${identifier.slice(-4)}` : identifier;
}

export class People {
  /**
   * @param {Function} api
   * @param {{brandOnly?: {shop: string, me: string} | null}} options
   */
  constructor(api, { brandOnly = null } = {}) {
    this.api = api;
    this.brandOnly = brandOnly;
    this.profiles = new Map(); // actor id -> profile
    this.loaded = new Map(); // thread id -> promise
    this.lookups = new Map(); // actor id -> promise, for actors named outside a thread's actors (a quote's payee)
    this.listeners = new Set();
  }

  /** Call `fn(actors)` whenever profiles arrive, with the ids of those that changed. */
  onChange(fn) {
    this.listeners.add(fn);
  }

  #changed(actors) {
    if (actors.size) for (const fn of [...this.listeners]) fn(actors);
  }

  /** Load the profiles of thread `id`'s actors (once; `again` reloads). Resolves when known. */
  load(threadId, again = false) {
    if (!again && this.loaded.has(threadId)) return this.loaded.get(threadId);
    const loading = this.api("GET", `/threads/${encodeURIComponent(threadId)}/profiles`)
      .then((list) => {
        const changed = new Set();
        for (const profile of list.data) {
          if (!sameProfile(this.profiles.get(profile.actor), profile)) changed.add(profile.actor);
          this.profiles.set(profile.actor, profile);
        }
        this.#changed(changed);
      })
      .catch((error) => {
        this.loaded.delete(threadId); // try again next time
        console.warn("Could not load the profiles of a thread", error);
      });
    this.loaded.set(threadId, loading);
    return loading;
  }

  set(profile) {
    const same = sameProfile(this.profiles.get(profile.actor), profile);
    this.profiles.set(profile.actor, profile);
    if (!same) this.#changed(new Set([profile.actor]));
  }

  profile(actor) {
    return this.profiles.get(actor) ?? null;
  }

  /**
   * Make sure `actor` is known, though it is no actor of a loaded thread (a quote may name any payee):
   * GET /v1/actors/{id} once. Until it answers, and if it cannot (an older server, no such actor), the actor
   * counts as unverified, which is the safe side.
   */
  lookup(actor) {
    // ("me" would be the signed-in actor's own identity: /v1/actors/me)
    if (!actor || actor === "me" || this.profiles.has(actor) || this.lookups.has(actor)) return;
    const looking = this.api("GET", `/actors/${encodeURIComponent(actor)}`)
      .then((identity) => {
        if (identity?.object !== "actor.identity" || identity.id !== actor) return; // not the answer asked for
        const profile = identity.profile ?? {};
        this.set({ ...profile, actor, verified: identity.verified, verification: identity.verification });
      })
      .catch((error) => {
        // a refusal is an answer (unknown, or not ours to see); a busy or unreachable server is asked again later
        if (error.status === 429 || !error.status) this.lookups.delete(actor);
      });
    this.lookups.set(actor, looking);
  }

  /** The name people see: the display name, else the actor id (a NEAR implicit account's shortened). */
  name(actor) {
    const named = this.profiles.get(actor)?.display_name;
    if (named) return named;
    if (this.isMe(actor)) return "You";
    // an agent of the shop without a name of its own speaks as the shop (which has its id only if unnamed)
    if (this.#brand(actor) && actor !== this.brandOnly.shop) return this.name(this.brandOnly.shop);
    return shortIdentifier(actor);
  }

  /** Whether `actor` is the embedding shop, one of its agents, or the customer, in the shop's embedded chat. */
  #brand(actor) {
    if (!this.brandOnly || typeof actor !== "string") return false;
    const { shop } = this.brandOnly;
    return actor === shop || this.isMe(actor) || actor.startsWith(`${shop}/`);
  }

  /** In the shop's embedded chat: whether `actor` is the customer, or the visitor the customer was before signing
   * in on the shop's website (`anon-…@<shop>`: only a visitor's own conversations become the customer's). */
  isMe(actor) {
    if (!this.brandOnly || typeof actor !== "string") return false;
    const { shop, me } = this.brandOnly;
    return actor === me || (actor.startsWith("anon-") && actor.endsWith(`@${shop}`) && !actor.slice(5, -shop.length - 1).includes("@"));
  }

  /** The name as the account gives it (display name, else its whole id): what an identifier is compared to. */
  #ownName(actor) {
    return this.profiles.get(actor)?.display_name || actor;
  }

  /**
   * What the server checked about `actor`: {verified, kind, identifier}. A profile without these fields
   * (an older server), or no profile at all, is an unverified account of this server, named by its id.
   */
  identity(actor) {
    const profile = this.profiles.get(actor);
    const verification = profile?.verification;
    const verified = profile?.verified === true && Boolean(verification?.identifier);
    return {
      verified,
      kind: verified ? verification.kind : "local",
      identifier: verified ? String(verification.identifier) : actor,
    };
  }

  verified(actor) {
    return this.#brand(actor) || this.identity(actor).verified;
  }

  /**
   * The verification mark that goes right after `actor`'s name: for a verified actor its identifier (when it
   * is not the name already) and ✓; else a plain "unverified" tag. Hover shows what was checked; a screen
   * reader hears it.
   */
  badge(actor) {
    if (this.#brand(actor)) return document.createDocumentFragment(); // nothing, wherever it is put
    const { verified, kind, identifier } = this.identity(actor);
    if (!verified) {
      return h(
        "span",
        { class: "identity identity-unverified", title: NOT_VERIFIED, dataset: { verified: "false" } },
        h("span", { "aria-hidden": "true" }, "unverified"),
        " ", // (spaces between the parts: not drawn in a flex box, but there when the text is copied or read)
        h("span", { class: "visually-hidden" }, NOT_VERIFIED),
      );
    }
    const shown = sameText(identifier, this.#ownName(actor)) ? null : shortIdentifier(identifier);
    return h(
      "span",
      { class: "identity identity-verified", title: verifiedTitle(kind, identifier), dataset: { verified: "true" } },
      shown && [h("span", { class: "identity-separator", "aria-hidden": "true" }, "·"), " "],
      shown && [h("span", { class: "identity-id" }, shown), " "],
      checkMark(),
    );
  }

  /**
   * `actor`'s name and its mark, as one inline element: "Sunny Socks · sunnysocks.example ✓". `me` (the
   * signed-in actor) is "you", as the sentences around it say, with no mark.
   */
  label(actor, { me = null } = {}) {
    if (actor === me) return h("span", { class: "person-label", dataset: { actor } }, "you");
    if (this.#brand(actor)) return h("span", { class: "person-label", dataset: { actor } }, this.name(actor));
    return h(
      "span",
      { class: "person-label", dataset: { actor } },
      h("span", { class: "person-label-name" }, this.name(actor)),
      " ",
      this.badge(actor),
    );
  }

  /** `actor` in words, for an accessible name: "Sunny Socks, verified as sunnysocks.example" or "…, not verified". */
  spoken(actor) {
    const { verified, identifier } = this.identity(actor);
    const name = this.name(actor);
    if (this.#brand(actor)) return name;
    if (!verified) return `${name}, not verified`;
    return sameText(identifier, this.#ownName(actor)) ? `${name}, verified` : `${name}, verified as ${identifier}`;
  }

  /**
   * `actor` as a review sentence names a payee: "Sunny Socks (sunnysocks.example ✓)" when verified, the name
   * alone otherwise (the warning beside it says the rest).
   */
  payee(actor) {
    const { verified, kind, identifier } = this.identity(actor);
    const name = this.name(actor);
    if (!verified || this.#brand(actor)) return h("span", { class: "payee-name" }, name);
    const shown = sameText(identifier, this.#ownName(actor)) ? null : shortIdentifier(identifier);
    return h(
      "span",
      { class: "payee-name", title: verifiedTitle(kind, identifier) },
      name,
      " ",
      h(
        "span",
        { class: "payee-identity" },
        "(",
        shown && h("span", { class: "identity-id" }, `${shown} `),
        checkMark(),
        ")",
      ),
    );
  }

  /** A decorative avatar (the name is always written next to it). */
  avatar(actor, size = "medium") {
    const url = safeImageUrl(this.profiles.get(actor)?.avatar_url);
    if (!url) return this.#initialAvatar(actor, size);
    const image = h("img", { class: `avatar avatar-${size}`, src: url, alt: "", "aria-hidden": "true" });
    // a logo that does not load shows the initial, never the broken-image icon
    image.addEventListener("error", () => image.replaceWith(this.#initialAvatar(actor, size)), { once: true });
    return image;
  }

  #initialAvatar(actor, size) {
    const name = this.name(actor);
    const initial = (name.match(/[\p{L}\p{N}]/u)?.[0] ?? "?").toUpperCase();
    return h(
      "span",
      { class: `avatar avatar-${size} avatar-initial`, "aria-hidden": "true", style: `--hue: ${hue(actor)}` },
      initial,
    );
  }
}

/** The ✓: a symbol, so an image to assistive technology, named in words. */
function checkMark() {
  return h("span", { class: "identity-check", role: "img", "aria-label": "verified" }, "✓");
}

function verifiedTitle(kind, identifier) {
  if (kind === "domain") return `Verified: ${identifier} publishes this account's keys`;
  if (kind === "near") return `Verified NEAR account ${identifier}: it signed in with its own key`;
  return `Verified: ${identifier}`;
}

/** A changed profile, or a changed verification (a domain proven since, or a lapsed one). */
function sameProfile(known, profile) {
  return (
    Boolean(known) &&
    known.updated_at === profile.updated_at &&
    known.verified === profile.verified &&
    known.verification?.identifier === profile.verification?.identifier &&
    known.verification?.kind === profile.verification?.kind
  );
}

function sameText(a, b) {
  return a.trim().toLowerCase() === String(b ?? "").trim().toLowerCase();
}

function hue(text) {
  let value = 0;
  for (const char of text) value = (value * 31 + char.codePointAt(0)) % 360;
  return value;
}
