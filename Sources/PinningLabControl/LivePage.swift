/// The live view's page, script and style: served by the tool itself (no external script, style or font), the script
/// as a file of its own so that the Content-Security-Policy can forbid inline script. Every value from the wire (host
/// names, request lines, alerts) is put into the page as text (`textContent`), never as markup.
enum LivePage {
    static let html = """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="referrer" content="no-referrer">
        <title>PinningLab live view</title>
        <link rel="stylesheet" href="live/app.css">
        </head>
        <body>
        <header>
        <h1>PinningLab live view</h1>
        <p id="source">connecting…</p>
        <p id="status" role="status">connecting…</p>
        </header>
        <main>
        <h2>Verdicts</h2>
        <p id="empty">No connection yet: point the client at the proxy (or at a scenario server) and use it.</p>
        <table>
        <thead><tr><th>host or server</th><th>policy / what it serves</th><th>connections</th><th>handshakes completed</th>
        <th>requests sent</th><th>verdict</th><th>why</th></tr></thead>
        <tbody id="groups"></tbody>
        </table>
        <h2>Connections, newest first</h2>
        <p id="filter" role="status"></p>
        <table>
        <thead><tr><th>#</th><th>time</th><th>host or server</th><th>policy / identity</th><th>chain presented</th>
        <th>handshake</th><th>application data</th><th>how it ended</th></tr></thead>
        <tbody id="connections"></tbody>
        </table>
        <p id="notes"></p>
        </main>
        <script src="live/app.js"></script>
        </body>
        </html>

        """

    static let script = #"""
        "use strict";
        (function () {
          // The token comes in the fragment (#token=…), which the browser never sends to a server.
          const token = new URLSearchParams(location.hash.slice(1)).get("token");
          const $ = (id) => document.getElementById(id);
          let version = -1;
          let failures = 0;
          // Clicking a host's row shows only its connections; clicking it again shows every connection.
          let selected = null;
          let last = null;

          function cell(tr, text, className) {
            const td = document.createElement("td");
            td.textContent = text;
            if (className) td.className = className;
            tr.appendChild(td);
          }

          function render(s) {
            last = s;
            if (selected !== null && !s.groups.some((g) => g.name === selected)) selected = null;
            $("source").textContent = s.source;
            $("status").textContent = "live: " + s.connectionsAccepted + " connections, " + s.connectionsOpen +
              " open; updated " + new Date().toLocaleTimeString();
            const groups = s.groups.map((g) => {
              const tr = document.createElement("tr");
              tr.className = g.tone;
              tr.dataset.name = g.name;
              tr.dataset.verdict = g.verdict;
              tr.tabIndex = 0;
              tr.setAttribute("aria-selected", String(g.name === selected));
              const choose = () => { selected = selected === g.name ? null : g.name; render(last); };
              tr.addEventListener("click", choose);
              tr.addEventListener("keydown", (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); choose(); } });
              cell(tr, g.name, "name");
              cell(tr, g.detail);
              cell(tr, String(g.connections), "n");
              cell(tr, String(g.handshakesCompleted), "n");
              cell(tr, String(g.requestsSent), "n");
              cell(tr, g.verdict, "verdict");
              cell(tr, g.message + (g.refusals.length ? ": " + g.refusals.join("; ") : ""));
              return tr;
            });
            $("groups").replaceChildren(...groups);
            $("filter").textContent = selected === null ? "" :
              "Showing the connections of " + selected + " only; click its row again to show all.";
            const shown = s.connections.filter((c) => selected === null || c.group === selected);
            const rows = shown.slice().reverse().map((c) => {
              const tr = document.createElement("tr");
              tr.className = c.applicationData ? "data" : (c.refusal ? "refusal" : "");
              tr.dataset.group = c.group || "";
              cell(tr, c.id, "n");
              cell(tr, new Date(c.startedAt).toLocaleTimeString());
              cell(tr, c.group || "(no host)", "name");
              cell(tr, c.detail);
              cell(tr, c.chain.join(" \u2192 "));
              cell(tr, c.handshakeCompleted ? "completed" : "not completed");
              cell(tr, c.applicationData ? "sent" + (c.requestLine ? ": " + c.requestLine : "") : "none");
              cell(tr, c.refusal ? "refused: " + c.refusal : c.closure + (c.error ? " (" + c.error + ")" : ""));
              return tr;
            });
            $("connections").replaceChildren(...rows);
            $("empty").hidden = s.groups.length > 0;
            $("notes").textContent = s.notes.join("; ");
          }

          const pause = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

          async function poll() {
            for (;;) {
              try {
                const wait = version < 0 ? 0 : 10;
                const r = await fetch("live/events?since=" + version + "&wait=" + wait, {
                  headers: token ? { "Authorization": "Bearer " + token } : {}, cache: "no-store",
                });
                if (r.status === 401) {
                  $("status").textContent = "The token is missing or wrong: open the address pinlab printed (…/live#token=…).";
                  return;
                }
                if (!r.ok) throw new Error("HTTP " + r.status);
                const s = await r.json();
                version = s.version;
                failures = 0;
                render(s);
              } catch (e) {
                failures += 1;
                $("status").textContent = "disconnected (" + e.message + "); retrying";
                await pause(Math.min(5000, 500 * failures));
                continue;
              }
              await pause(100);
            }
          }
          poll();
        })();

        """#

    static let style = """
        body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5em; color: #1b1b1b; background: #fff; }
        h1 { font-size: 1.4em; margin: 0 0 .2em; }
        h2 { font-size: 1.1em; margin: 1.4em 0 .4em; }
        #source { color: #555; margin: 0; }
        #status { margin: .3em 0 0; font-weight: 600; }
        table { border-collapse: collapse; width: 100%; }
        th, td { text-align: left; padding: .25em .6em; border-bottom: 1px solid #ddd; vertical-align: top; }
        th { background: #f3f3f3; font-weight: 600; }
        td.n { text-align: right; font-variant-numeric: tabular-nums; }
        td.name { font-family: ui-monospace, monospace; white-space: nowrap; }
        td.verdict { white-space: nowrap; }
        tr.good td.verdict { color: #0a6b2b; font-weight: 700; }
        tr.bad td.verdict { color: #b00020; font-weight: 700; }
        tr.bad { background: #fff0f0; }
        tr.neutral td.verdict { color: #555; }
        tr.refusal td:last-child { color: #0a6b2b; }
        tr.data td:nth-child(7) { color: #8a5300; }
        #notes { color: #555; }
        #groups tr { cursor: pointer; }
        #groups tr[aria-selected="true"] { outline: 2px solid #1b4fd6; outline-offset: -2px; }
        #filter { color: #1b4fd6; margin: 0 0 .3em; }

        """
}
