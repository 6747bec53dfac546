import { describe, expect, it } from 'vitest';
import { flatXmlValue, parseFlatXml, type XmlScanWork } from '../../src/platform/outlinks/channels/channel-crypto.js';

const MB = 1024 * 1024;
/** `unit` repeated to about 1 MB. */
const fill = (unit: string, tail = '') => unit.repeat(Math.ceil(MB / unit.length)) + tail;

describe('parseFlatXml', () => {
  it('reads the flat messages WeChat and WeCom send (CDATA and plain values)', () => {
    const xml =
      '<xml><ToUserName><![CDATA[gh_1]]></ToUserName><FromUserName><![CDATA[o<1>]]></FromUserName><CreateTime>1700000000</CreateTime>' +
      '<MsgType><![CDATA[text]]></MsgType><Content><![CDATA[a ]] b </Content> c]]></Content><MsgId>42</MsgId><Empty></Empty></xml>';
    expect(parseFlatXml(xml)).toEqual({ ToUserName: 'gh_1', FromUserName: 'o<1>', CreateTime: '1700000000', MsgType: 'text', Content: 'a ]] b </Content> c', MsgId: '42', Empty: '' });
    expect(flatXmlValue('<xml><ToUserName>gh</ToUserName><Encrypt><![CDATA[abc+/=]]></Encrypt></xml>', 'Encrypt')).toBe('abc+/=');
    expect(flatXmlValue('<xml><A>1</A></xml>', 'Encrypt')).toBe('');
    // A CDATA section is text: a tag-like string inside one is not a value.
    expect(parseFlatXml('<xml><A><![CDATA[<B>x</B>]]>tail</A></xml>')).toEqual({});
  });

  // The pattern it replaced, /<(\w+)>(?:<!\[CDATA\[([\s\S]*?)\]\]>|([^<]*))<\/\1>/g, searched to
  // the end of the input from every unclosed CDATA opener: k openers in n characters cost k·n
  // (16 s of one core for 1 MB, before the WeCom signature check). The scanner reports the
  // characters its searches passed over: bounded by twice the input whatever its shape.
  it.each([
    ['unclosed CDATA openers (the reported attack)', fill('<a><![CDATA['), {}],
    ['CDATA openers closed once at the very end', fill('<a><![CDATA[', ']]>'), {}],
    ['openers without values', fill('<a>'), {}],
    ['bare angle brackets', fill('<'), {}],
    ['one long unclosed tag name', `<${'a'.repeat(MB)}`, {}],
    ['unclosed values, then one closed', fill('<a>x', '</a>'), { a: 'x' }],
    ['closing tags only', fill('</a>'), {}],
  ])('does linear work on 1 MB of %s', (_name, xml, expected) => {
    const work: XmlScanWork = { chars: 0 };
    expect(parseFlatXml(xml, work)).toEqual(expected);
    expect(work.chars).toBeGreaterThan(0);
    expect(work.chars).toBeLessThanOrEqual(2 * xml.length);
  });
});
