// Which capability a message belongs to, and the `$schema` URL a reply must carry: always the
// version the thread negotiated (GET /v1/threads/{id}/capabilities), never one picked here.

// Hub-era URLs that name a capability without its id (see capabilities/*/capability.json).
const ALIASES = {
  "https://aitp.dev/v1/decisions/schema.json": "aitp-02-decisions",
  "https://aitp.dev/v1/decision/schema.json": "aitp-02-decisions",
  "https://aitp.dev/v1/requests.schema.json": "aitp-02-decisions",
  "https://aitp.dev/v1/data/schema.json": "aitp-03-data-request",
  "https://aitp.dev/v1/payments/schema.json": "aitp-legacy-payments",
  "https://aitp.dev/v1/payments.schema.json": "aitp-legacy-payments",
  "https://aitp.dev/v1/payment.schema.json": "aitp-legacy-payments",
};

/** {capability, version} named by a `$schema` URL (canonical, this server's own, or an alias). */
export function capabilityFromSchemaUrl(url) {
  if (typeof url !== "string") return { capability: null, version: null };
  if (ALIASES[url]) return { capability: ALIASES[url], version: null };
  const match = url.match(/\/capabilities\/([a-z0-9][a-z0-9._-]*)\/v?(\d+\.\d+\.\d+)\/schema\.json$/);
  if (!match) return { capability: null, version: null };
  // the reference's old id for the hub-era payments is shipped here as aitp-legacy-payments
  const capability = match[1] === "aitp-04-transactions" ? "aitp-legacy-payments" : match[1];
  return { capability, version: match[2] };
}

/** {capability, version, type} of a part: from the server's `aitp` field, else from the payload. */
export function capabilityOf(payload, part) {
  const aitp = part && part.aitp;
  if (aitp && aitp.capability) return { capability: aitp.capability, version: aitp.version, type: aitp.type };
  const fromUrl = capabilityFromSchemaUrl(payload && payload.$schema);
  const type = payload ? (Object.keys(payload).find((key) => key !== "$schema") ?? null) : null;
  return { ...fromUrl, type };
}

/** "aitp-02-decisions 1.0.0 · request_decision", or a neutral label when nothing names it. */
export function capabilityLabel(payload, part) {
  const { capability, version, type } = capabilityOf(payload, part);
  if (!capability) return type ? `JSON message · ${type}` : "JSON message";
  return [capability, version, type ? `· ${type}` : null].filter(Boolean).join(" ");
}

/**
 * The `$schema` for a reply in `capability`: `{url}` with the thread's negotiated version, or
 * `{reason}` saying why this thread cannot carry such a reply.
 */
export function replySchema(ctx, capability) {
  const table = (ctx.capabilities && ctx.capabilities.data) || [];
  const entry = table.find((row) => row.id === capability);
  if (!entry) return { reason: `${capability} is not negotiated in this thread, so a reply cannot be sent.` };
  if (!entry.version) {
    const missing = (entry.unsupported_by || []).join(", ") || "some actors";
    return { reason: `${capability} has no version every actor reads (not supported by ${missing}).` };
  }
  if (ctx.me && entry.supported_by && !entry.supported_by.includes(ctx.me)) {
    return { reason: `You (${ctx.me}) did not declare ${capability} in this thread.` };
  }
  return { url: `https://aitp.dev/capabilities/${capability}/v${entry.version}/schema.json`, version: entry.version };
}
