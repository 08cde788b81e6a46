// Build-time math: read [{tex, display}] as JSON on stdin, print the KaTeX HTML of each
// as a JSON array. The hook calls this once per page, so pages ship rendered math and
// only KaTeX's stylesheet and fonts (from this site), never its script.
import katex from "katex";

let input = "";
process.stdin.setEncoding("utf8");
process.stdin.on("data", (chunk) => (input += chunk));
process.stdin.on("end", () => {
  const out = [];
  for (const { tex, display } of JSON.parse(input)) {
    try {
      out.push({ html: katex.renderToString(tex, { displayMode: display, throwOnError: true, output: "htmlAndMathml" }) });
    } catch (err) {
      out.push({ error: String(err.message || err) });
    }
  }
  process.stdout.write(JSON.stringify(out));
});
