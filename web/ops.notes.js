// @ts-check
// A note for a person (issue 52) as a sentence and a code, the raw text one click away: a
// provider's raw JSON in a note must not crush the table it sits in.
import { h } from './api.js';

// A sentence is cut at the first raw body (JSON) or at this many characters.
const SENTENCE_MAX = 140;
// A code is an upper-case word with underscores (ERROR_500, SOLD_OUT) or an HTTP status, whichever comes first.
const WORD_CODE = /\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b/;
const HTTP_CODE = /\bhttp (\d{3})\b/i;

/** @param {string} raw */
function codeOf(raw) {
  const word = WORD_CODE.exec(raw);
  const http = HTTP_CODE.exec(raw);
  if (http && (!word || http.index < word.index)) return `HTTP ${http[1]}`;
  if (word) return word[0];
  return /^cannot converge/.test(raw) ? 'STUCK' : /^REVIEW\b/.test(raw) ? 'REVIEW' : 'NOTE';
}

/** @param {string} text */
export function noteParts(text) {
  const raw = text.trim();
  const body = raw.search(/[{[]/);
  let sentence = (body >= 0 ? raw.slice(0, body) : raw).replace(/[\s:,-]+$/, '');
  if (sentence.length > SENTENCE_MAX) sentence = `${sentence.slice(0, SENTENCE_MAX - 1)}…`;
  if (sentence === '') sentence = 'the provider answered with a body';
  const code = codeOf(raw);
  return { sentence, code, raw, shortened: sentence !== raw };
}

/**
 * The note as elements: its sentence, its code, and (when the sentence is not the whole text) the
 * raw text behind a disclosure, wrapped and scrollable inside its cell.
 * @param {string} text
 */
export function noteView(text) {
  const n = noteParts(text);
  return h(
    'span',
    { class: 'note', 'data-code': n.code },
    `${n.sentence} `,
    h('code', { class: 'code' }, n.code),
    n.shortened ? h('details', { class: 'raw' }, h('summary', {}, 'raw'), h('pre', {}, n.raw)) : null,
  );
}
