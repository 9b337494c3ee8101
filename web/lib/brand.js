/**
 * A shop's brand colour (its profile's `accent_color`, "#rrggbb") as the CSS custom properties of the embedded
 * chat, each readable: the colour itself as a background (the header, buttons, my bubbles) with black or white
 * text, whichever contrasts more (never below 4.5:1 for any colour), and an "ink" of the colour for text on the
 * page (links, the new-messages line), darkened in light mode and lightened in dark mode until it reaches 4.5:1
 * against the page's surfaces.
 */

const HEX = /^#([0-9a-f]{6})$/i;
const WHITE = [255, 255, 255];
const BLACK = [0, 0, 0];
// the surfaces text sits on (web/styles.css: --bg, --surface, --surface-2), light and dark
const LIGHT_SURFACES = ["#ffffff", "#f5f6fa", "#f0f1f7"].map(rgbOf);
const DARK_SURFACES = ["#111318", "#1a1d25", "#222632"].map(rgbOf);
const READABLE = 4.5; // WCAG AA for normal text

function rgbOf(hex) {
  const value = parseInt(hex.slice(1), 16);
  return [(value >> 16) & 255, (value >> 8) & 255, value & 255];
}

function hexOf(rgb) {
  return `#${rgb.map((channel) => Math.round(channel).toString(16).padStart(2, "0")).join("")}`;
}

/** WCAG relative luminance. */
function luminance(rgb) {
  const [r, g, b] = rgb.map((channel) => {
    const c = channel / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

/** The WCAG contrast ratio of two colours (1 to 21). */
export function contrast(a, b) {
  const [high, low] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (high + 0.05) / (low + 0.05);
}

/** `rgb` moved `amount` (0 to 1) of the way to `toward`, in whole channels (as the CSS colour will be). */
function mix(rgb, toward, amount) {
  return rgb.map((channel, index) => Math.round(channel + (toward[index] - channel) * amount));
}

/** `rgb` moved toward `toward` just enough to read at 4.5:1 on every one of `surfaces`. */
function inkOn(rgb, toward, surfaces) {
  for (let step = 0; step <= 20; step += 1) {
    const ink = mix(rgb, toward, step / 20);
    if (surfaces.every((surface) => contrast(ink, surface) >= READABLE)) return ink;
  }
  return toward;
}

/**
 * The colour under the pointer: further from its text (the contrast only grows), or, for black or white
 * themselves, a little toward it (black and white stay far above 4.5:1 with their text after that).
 */
function hover(brand, text) {
  const away = mix(brand, text === WHITE ? BLACK : WHITE, 0.15);
  return hexOf(away) === hexOf(brand) ? mix(brand, text, 0.15) : away;
}

/**
 * The custom properties for brand colour `hex` ({"--brand": …}), or null when it is not a "#rrggbb" colour (the
 * chat then keeps its own colours).
 */
export function brandProperties(hex) {
  if (typeof hex !== "string" || !HEX.test(hex.trim())) return null;
  const brand = rgbOf(hex.trim());
  const onBrand = contrast(brand, WHITE) >= contrast(brand, BLACK) ? WHITE : BLACK;
  return {
    "--brand": hexOf(brand),
    "--brand-text": hexOf(onBrand),
    "--brand-hover": hexOf(hover(brand, onBrand)),
    "--brand-ink-light": hexOf(inkOn(brand, BLACK, LIGHT_SURFACES)),
    "--brand-ink-dark": hexOf(inkOn(brand, WHITE, DARK_SURFACES)),
  };
}
