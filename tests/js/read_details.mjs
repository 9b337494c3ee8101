// The official `openai` JS SDK reads aitp's two faces: every message of each thread through the Threads face
// (client.beta.threads.messages.list) and every item through the Conversations face
// (client.conversations.items.list), paging as the SDK pages, and checks that each image part's `detail` is one
// of the values the SDK's own type declarations allow for it (read from the installed package's .d.ts, so the
// check follows the pinned version).
//
// Usage: node read_details.mjs <base_url> <key> <thread_id>...
// Prints {"<thread_id>": {"threads": [detail...], "conversations": [detail...]}} (an absent detail as
// "(absent)"); exits 1 after printing if a detail is not one its type allows, 2 on any other failure.

import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import OpenAI from 'openai';

const ABSENT = '(absent)';
const root = dirname(fileURLToPath(import.meta.resolve('openai')));

/** The values `iface.field` may take in the installed declarations: its string literals, plus undefined when
 * the field is optional and null when the union names it. */
function allowed(file, iface, field) {
  const text = readFileSync(join(root, file), 'utf8');
  const body = text.match(new RegExp(`^export interface ${iface} \\{([\\s\\S]*?)^\\}`, 'm'));
  const declared = body && body[1].match(new RegExp(`^\\s*${field}(\\??): ([^;]+);`, 'm'));
  if (!declared) throw new Error(`${file} declares no ${iface}.${field}: update this script for the new SDK`);
  const values = new Set([...declared[2].matchAll(/'([^']*)'/g)].map((literal) => literal[1]));
  if (declared[1] === '?') values.add(undefined);
  if (/\bnull\b/.test(declared[2])) values.add(null);
  return values;
}

/** Each image part's type, and the details it allows. */
function declaredTypes() {
  return {
    image_url: ['ImageURL', allowed('resources/beta/threads/messages.d.ts', 'ImageURL', 'detail')],
    image_file: ['ImageFile', allowed('resources/beta/threads/messages.d.ts', 'ImageFile', 'detail')],
    input_image: ['ResponseInputImage', allowed('resources/responses/responses.d.ts', 'ResponseInputImage', 'detail')],
  };
}

const [baseURL, apiKey, ...threadIds] = process.argv.slice(2);
if (!baseURL || !apiKey || threadIds.length === 0) {
  console.error('usage: node read_details.mjs <base_url> <key> <thread_id>...');
  process.exit(2);
}
const client = new OpenAI({ apiKey, baseURL: `${baseURL}/v1`, maxRetries: 0 });
const wrong = [];
let TYPES;

function seen(where, kind, detail) {
  const [type, values] = TYPES[kind];
  if (!values.has(detail)) {
    const shown = [...values].map((value) => JSON.stringify(value) ?? 'undefined').join(', ');
    wrong.push(`${where}: ${kind} detail ${JSON.stringify(detail)} is not one of ${type}.detail's ${shown}`);
  }
  return detail === undefined ? ABSENT : detail;
}

async function readAll() {
  const read = {};
  for (const threadId of threadIds) {
    const threads = [];
    // limit 2: several pages each, as the SDK pages them (`after` the last id)
    for await (const message of client.beta.threads.messages.list(threadId, { order: 'asc', limit: 2 })) {
      for (const [i, part] of message.content.entries()) {
        const where = `thread ${threadId} message ${message.id} content[${i}]`;
        if (part.type === 'image_url') threads.push(seen(where, part.type, part.image_url.detail));
        if (part.type === 'image_file') threads.push(seen(where, part.type, part.image_file.detail));
      }
    }
    const conversations = [];
    for await (const item of client.conversations.items.list(threadId, { order: 'asc', limit: 2 })) {
      for (const [i, part] of (item.content ?? []).entries()) {
        const where = `conversation ${threadId} item ${item.id} content[${i}]`;
        if (part.type === 'input_image') conversations.push(seen(where, part.type, part.detail));
      }
    }
    read[threadId] = { threads, conversations };
  }
  return read;
}

let read;
try {
  TYPES = declaredTypes();
  read = await readAll();
} catch (error) {
  console.error(error);
  process.exit(2);
}
console.log(JSON.stringify(read));
if (wrong.length > 0) {
  console.error(wrong.join('\n'));
  process.exit(1);
}
