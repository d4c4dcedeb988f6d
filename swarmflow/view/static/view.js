// swarmflow view: keeps a page live by polling its fragments, and links timeline blocks to
// transcript steps. No framework, no build step; it talks to this server only.
"use strict";
(function () {
  const body = document.body;
  const source = body.dataset.poll;
  const every = 1000;
  // The list of runs keeps watching for new runs; a run's or an experiment's page stops once
  // it has ended.
  const always = body.dataset.always === "yes";

  function openDetails() {
    return new Set(Array.from(document.querySelectorAll("details[id][open]"), (d) => d.id));
  }

  function swap(fragments) {
    const open = openDetails();
    for (const [id, html] of Object.entries(fragments)) {
      const el = document.getElementById(id);
      if (el && el.innerHTML !== html) el.innerHTML = html;
    }
    for (const id of open) {
      const d = document.getElementById(id);
      if (d) d.open = true;
    }
  }

  async function poll() {
    let live = true;
    try {
      const answer = await fetch(source, { cache: "no-store", headers: { Accept: "application/json" } });
      if (answer.ok) {
        const data = await answer.json();
        swap(data.html);
        live = data.live;
        if (data.count !== undefined) body.dataset.count = String(data.count);
        if (data.status !== undefined) body.dataset.status = data.status;
      }
    } catch (err) {
      // The server went away (the view was stopped): say so once, and stop asking.
      const mark = document.getElementById("live-mark");
      if (mark) mark.textContent = "disconnected";
      return;
    }
    body.dataset.live = live ? "yes" : "no";
    body.dataset.polls = String(Number(body.dataset.polls || "0") + 1);
    const mark = document.getElementById("live-mark");
    if (mark) mark.textContent = live ? "live" : "";
    if (live || always) window.setTimeout(poll, every * (live ? 1 : 2));
  }

  function show(block) {
    const details = document.getElementById("details");
    if (!details) return;
    for (const b of document.querySelectorAll(".block.selected")) b.classList.remove("selected");
    block.classList.add("selected");
    details.textContent = block.dataset.text || "";
    const seq = block.dataset.seq;
    for (const p of document.querySelectorAll(".part.marked")) p.classList.remove("marked");
    const part = document.querySelector('.part[data-order="' + seq + '"]');
    if (part) {
      part.classList.add("marked");
      const holder = part.closest("details");
      if (holder) holder.open = true;
    }
  }

  document.addEventListener("click", (event) => {
    const block = event.target.closest(".block");
    if (block) show(block);
  });

  body.dataset.ready = "yes";
  if (source && (body.dataset.live === "yes" || always)) window.setTimeout(poll, every);
})();
