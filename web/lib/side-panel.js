/**
 * The side panel of an open thread: the people in it (name, avatar, description), and, folded under
 * "Developer details" for developers, the protocol view: the thread id, each actor's id, role and
 * capabilities, the negotiated capability table (GET /v1/threads/{id}/capabilities: version per
 * capability, who can and cannot read it) and a form to add an actor.
 */

import { actorFields } from "./actor-fields.js";
import { disclosureForm } from "./disclosure-form.js";
import { h, replaceChildren } from "./dom.js";

/** The capability id and version of a declaration (a schema URL, {schema} or a range). */
export function describeDeclaration(declaration) {
  if (typeof declaration === "string") return declaration;
  if (declaration.schema) return declaration.schema;
  if (declaration.capability) return `${declaration.capability} ${declaration.versions}`;
  return JSON.stringify(declaration);
}

function shortDeclaration(declaration) {
  const text = describeDeclaration(declaration);
  const match = /\/capabilities\/([^/]+)\/v(\d+\.\d+\.\d+)\/schema\.json$/.exec(text);
  return match ? `${match[1]} v${match[2]}` : text;
}

/** What the server checked about an actor, in a sentence. */
function identityLine({ verified, kind, identifier }) {
  if (!verified) return "Not verified: this name is what the account says about itself.";
  const id = h("span", { class: "identity-full" }, identifier);
  if (kind === "domain") return ["Verified: ", id, " publishes this account's keys."];
  if (kind === "near") return ["Verified NEAR account ", id, "."];
  return ["Verified as ", id, "."];
}

export class SidePanel {
  /**
   * @param {HTMLElement} root the <aside>
   * @param {{registry: () => object[], addActor: (actor: object) => Promise<void>}} options
   */
  constructor(root, { registry, addActor, people }) {
    this.root = root;
    this.registry = registry;
    this.addActor = addActor;
    this.people = people;
    this.peopleList = h("ul", { class: "people", "aria-label": "People in this conversation" });
    this.actorsList = h("ul", { class: "actors", "aria-label": "Actors of this thread" });
    this.threadId = h("code", { class: "thread-id" });
    this.table = h("div", { class: "capability-table" });
    this.formSlot = h("div");
    replaceChildren(
      root,
      // a phone shows this panel instead of the conversation: the way back (hidden on wide screens)
      h("button", { type: "button", id: "close-details", class: "secondary small close-details" }, "Back to the conversation"),
      h(
        "section",
        { "aria-labelledby": "people-heading" },
        h("h2", { id: "people-heading" }, "People"),
        this.peopleList,
      ),
      h(
        "details",
        { class: "developer-details", id: "developer-details" },
        h("summary", {}, "Developer details"),
        h("p", { class: "hint" }, "Thread ", this.threadId),
        h(
          "section",
          { "aria-labelledby": "actors-heading" },
          h("h2", { id: "actors-heading" }, "Actors"),
          this.actorsList,
          this.formSlot,
        ),
        h(
          "section",
          { "aria-labelledby": "capabilities-heading" },
          h("h2", { id: "capabilities-heading" }, "Capabilities"),
          h("p", { class: "hint" }, "The version every actor reads, and who cannot read what."),
          this.table,
        ),
      ),
    );
  }

  /** Show `actors` (the thread's `id`) with `me` marked. */
  showActors(actors, me, id = null) {
    if (id) this.threadId.textContent = id;
    replaceChildren(
      this.peopleList,
      actors.map((actor) => {
        const profile = this.people.profile(actor.id);
        return h(
          "li",
          { class: "person", dataset: { actor: actor.id } },
          this.people.avatar(actor.id, "large"),
          h(
            "div",
            { class: "person-text" },
            h(
              "span",
              { class: "person-name" },
              this.people.name(actor.id),
              this.people.badge(actor.id),
              actor.id === me && h("span", { class: "badge" }, "you"),
            ),
            // in words, for screens without tooltips: what the mark stands for
            h("p", { class: "person-identity" }, identityLine(this.people.identity(actor.id))),
            profile?.description && h("p", { class: "person-description" }, profile.description),
          ),
        );
      }),
    );
    replaceChildren(
      this.actorsList,
      actors.map((actor) =>
        h(
          "li",
          { class: "actor", dataset: { actor: actor.id } },
          h(
            "div",
            { class: "actor-head" },
            h("span", { class: "actor-id" }, actor.id),
            actor.id === me && h("span", { class: "badge" }, "you"),
            h("span", { class: `role role-${actor.role}` }, actor.role),
          ),
          actor.capabilities.length
            ? h(
                "ul",
                { class: "declarations", "aria-label": `Capabilities of ${actor.id}` },
                actor.capabilities.map((declaration) =>
                  h("li", { title: describeDeclaration(declaration) }, shortDeclaration(declaration)),
                ),
              )
            : h("p", { class: "hint" }, "No capabilities declared: reads plain text only."),
        ),
      ),
    );
  }

  /** Show the negotiated table (GET /v1/threads/{id}/capabilities). */
  showCapabilities(table) {
    if (!table.data.length && !table.unknown.length) {
      replaceChildren(this.table, h("p", { class: "hint" }, "No actor declares a capability yet."));
      return;
    }
    // one card per capability rather than a four-column table: the panel is narrow
    const items = table.data.map((capability) =>
      h(
        "li",
        { class: "negotiated", dataset: { capability: capability.id } },
        h(
          "div",
          { class: "negotiated-head" },
          h("span", { class: "capability-id" }, capability.id),
          h(
            "span",
            { class: capability.version ? "version" : "version none" },
            capability.version ? `v${capability.version}` : "none",
          ),
        ),
        h(
          "dl",
          {},
          h("dt", {}, "Read by"),
          h("dd", { class: "supported" }, capability.supported_by.join(", ") || "—"),
          h("dt", {}, "Cannot read"),
          h(
            "dd",
            { class: capability.unsupported_by.length ? "unsupported warn" : "unsupported" },
            capability.unsupported_by.join(", ") || "—",
          ),
        ),
      ),
    );
    replaceChildren(
      this.table,
      h("ul", { class: "negotiated-list", "aria-label": "Negotiated capabilities" }, items),
      table.unknown.length > 0 &&
        h(
          "p",
          { class: "hint" },
          "Unknown declarations: ",
          table.unknown.map((item) => `${item.actor} (${describeDeclaration(item.declaration)})`).join(", "),
        ),
    );
  }

  /** (Re)build the "Add an actor" form (the registry may have changed). */
  showAddActorForm() {
    const fields = actorFields(this.registry(), { legend: "New actor" });
    const form = disclosureForm({
      summary: "Add an actor",
      className: "add-actor",
      submitLabel: "Add actor",
      children: [fields.element],
      action: () => this.addActor(fields.value()),
      done: () => this.showAddActorForm(),
    });
    replaceChildren(this.formSlot, form);
  }
}
