/** Who the signed-in key acts as, from `GET /v1/actors/me` (a bad key rejects with the server's 401). */

export class Identity {
  constructor() {
    this.actor = null;
    this.admin = false;
  }

  async load(api) {
    const me = await api("GET", "/actors/me");
    this.actor = me.id;
    // Admin keys act as "admin" and may also write as any member, which the composer offers.
    this.admin = me.admin;
    this.inboxCursor = me.inbox_cursor;
  }
}
