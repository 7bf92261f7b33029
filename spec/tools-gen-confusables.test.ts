import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { MARKER_CONFUSABLES } from '../lib/untrusted/confusables.ts';
import { MARKER_LETTERS, pickFolds, render } from '../tools/gen-confusables.ts';

// Lines in confusables.txt's own format (UTS #39), including ones the generator must leave out.
const SAMPLE = [
  '# confusables.txt',
  '# Version: 17.0.0',
  '0415 ;\t0045 ;\tMA\t# ( Е → E ) CYRILLIC CAPITAL LETTER IE → LATIN CAPITAL LETTER E\t# ',
  'A731 ;\t0073 ;\tMA\t# ( ꜱ → s ) LATIN LETTER SMALL CAPITAL S → LATIN SMALL LETTER S\t# ',
  'AB7C ;\t1D07 ;\tMA\t# ( ꭼ → ᴇ ) CHEROKEE SMALL LETTER GV → LATIN LETTER SMALL CAPITAL E\t# ',
  '0432 ;\t0299 ;\tMA\t# ( в → ʙ ) CYRILLIC SMALL LETTER VE → LATIN LETTER SMALL CAPITAL B\t# ',
  '0031 ;\t006C ;\tMA\t# ( 1 → l ) DIGIT ONE → LATIN SMALL LETTER L\t# ',
  '0406 ;\t006C ;\tMA\t# ( І → l ) CYRILLIC CAPITAL LETTER BYELORUSSIAN-UKRAINIAN I → LATIN SMALL LETTER L\t# →I→',
  'FF21 ;\t0041 ;\tMA\t# ( Ａ → A ) FULLWIDTH LATIN CAPITAL LETTER A → LATIN CAPITAL LETTER A\t# ',
  '0411 ;\t0062 ;\tMA\t# ( Б → b ) not a marker letter\t# ',
  '04A3 ;\t029C 0329 ;\tMA\t# ( ң → ʜ̩ ) two code points → skipped\t# ',
].join('\n');

describe('tools/gen-confusables', () => {
  it('MARKER_LETTERS are the letters of EXTERNAL_UNTRUSTED_CONTENT and END', () => {
    assert.equal(MARKER_LETTERS, 'ACDELNORSTUX');
  });

  it('pickFolds() keeps look-alikes of marker letters, folds small capitals to the letter, skips what NFKC makes ASCII and other letters', () => {
    const folds = pickFolds(SAMPLE);
    assert.deepEqual(
      [...folds].sort((a, b) => a[0] - b[0]),
      [
        [0x0406, 'l'],
        [0x0415, 'E'],
        [0x1d07, 'e'],
        [0xa731, 's'],
        [0xab7c, 'e'],
      ],
    );
  });

  it('render() writes a module whose table reads back as the folds, with the data file named in its header', async () => {
    const text = render(pickFolds(SAMPLE), { version: '17.0.0', date: '2025-07-22', sha256: 'ab'.repeat(32) });
    assert.match(text, /confusables\.txt \(UTS #39\),\n\/\/ version 17\.0\.0, dated 2025-07-22, SHA-256 (ab){32}/);
    const module = (await import(
      `data:text/javascript,${
        encodeURIComponent(text.replace(/: Readonly<[^>]+>>|: ReadonlyMap<string, string>|: \[string, string\]/g, ''))
      }`
    )) as { MARKER_CONFUSABLES: Map<string, string> };
    assert.deepEqual([...module.MARKER_CONFUSABLES], [['\u0415', 'E'], ['\u1D07', 'e'], ['\uAB7C', 'e'], [
      '\u0406',
      'l',
    ], ['\uA731', 's']]);
  });

  it('the committed table covers the look-alikes the issue names and maps only to marker letters', () => {
    for (const [char, letter] of [['\u0415', 'E'], ['\u0455', 's'], ['\u1D07', 'e'], ['\uA731', 's']] as const) {
      assert.equal(MARKER_CONFUSABLES.get(char), letter, `U+${char.codePointAt(0)!.toString(16)}`);
    }
    for (const [char, letter] of MARKER_CONFUSABLES) {
      assert.ok(MARKER_LETTERS.includes(letter.toUpperCase()), `${char} → ${letter}`);
      assert.ok(char.codePointAt(0)! >= 0x80);
    }
  });
});
