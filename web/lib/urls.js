/**
 * URLs from messages are untrusted: only http(s) links and images (and inline raster images) reach
 * an href or src, so a `javascript:` or relative URL in a message cannot run or point inside the app.
 */

/** `url` if it is an absolute http(s) URL, else null. */
export function safeLinkUrl(url) {
  if (typeof url !== "string") return null;
  try {
    const parsed = new URL(url);
    return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.href : null;
  } catch {
    return null;
  }
}

/** `url` if it is safe to show as an image (http, https or a data:image raster URL), else null. */
export function safeImageUrl(url) {
  if (typeof url !== "string") return null;
  if (/^data:image\/(png|jpe?g|gif|webp|avif|bmp);/i.test(url)) return url;
  return safeLinkUrl(url);
}
