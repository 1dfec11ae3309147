//! The page's inline style sheet and script (the page fetches nothing).

pub(super) const CSS: &str = r##"
:root{--in:#1f5fbf;--in-bg:#eef4ff;--out:#2e7d4f;--out-bg:#effaf2;--ev:#6b6b6b;--bad:#b3261e;--bad-bg:#fdecea;--diff:#7b1fa2;--diff-bg:#f6e9fb;--line:#d9dde3;--fg:#1d1f23;--muted:#6b7280}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:#fafbfc}
header{position:sticky;top:0;z-index:5;background:#fff;border-bottom:1px solid var(--line);padding:10px 18px;max-height:45vh;overflow:auto}
h1{font-size:17px;margin:0 0 2px;word-break:break-all}
h1 .tool{color:var(--muted);font-weight:500;margin-right:6px}
.sub{margin:0 0 6px;color:var(--muted)}
.verdict{padding:6px 10px;border-radius:6px;margin:6px 0;word-break:break-word}
.verdict.same{background:var(--out-bg);border:1px solid #9fd3b0}
.verdict.differ{background:var(--diff-bg);border:1px solid #c99be0}
.verdict.incomparable{background:var(--bad-bg);border:1px solid #eba39c}
.summary{margin:4px 0}
.finding-index{margin:4px 0;padding-left:22px;max-height:9em;overflow:auto;font-size:13px}
.finding-index .error-reply a,.finding-index .engine a{color:var(--bad)}
.warn{color:var(--bad)}
nav{display:flex;gap:10px;align-items:center;flex-wrap:wrap;margin-top:6px;font-size:13px}
nav button{font:inherit;padding:2px 8px;border:1px solid var(--line);border-radius:5px;background:#f3f4f6;cursor:pointer}
.legend{margin-left:auto;display:flex;gap:8px}
.lg{padding:1px 8px;border-radius:10px}
.lg.in{background:var(--in-bg);color:var(--in)}.lg.out{background:var(--out-bg);color:var(--out)}
main{padding:12px 18px 40px;max-width:1400px;margin:0 auto}
.row{display:flex;gap:8px;margin:4px 0;align-items:flex-start}
.row .meta{flex:0 0 118px;font:12px/1.6 ui-monospace,SFMono-Regular,Menlo,monospace;color:var(--muted);text-align:right;padding-top:3px}
.row .meta a{color:var(--muted);text-decoration:none}
.pid{display:block;font-size:10px}
.bubble{min-width:0;max-width:74%;border-radius:8px;padding:5px 9px;border:1px solid var(--line);background:#fff;overflow-wrap:anywhere}
.row.in .bubble{background:var(--in-bg);border-color:#bcd0f3;border-left:4px solid var(--in)}
.row.out{flex-direction:row}
.row.out .bubble{margin-left:auto;background:var(--out-bg);border-color:#b9e0c6;border-right:4px solid var(--out)}
.row.event .bubble{margin:0 auto;max-width:90%;background:#f1f1f1;color:var(--ev);border-style:dashed;text-align:center}
.row.ev-spawn .bubble,.row.ev-exit .bubble{border:1px solid #999;background:#ececec;color:#333;font-weight:600}
.row.out.k-request .bubble{background:#fff8e6;border-color:#f0cf7a;border-right-color:#d08c00}
.row.out.k-request .head .kind{color:#a36a00}
.row.raw .bubble{background:var(--bad-bg);border-color:#eba39c;max-width:90%}
.row.noise{opacity:.6}
.row.has-finding .bubble{box-shadow:0 0 0 2px #f2b8b5}
.head .kind{font-size:11px;text-transform:uppercase;letter-spacing:.04em;color:var(--muted);margin-right:4px}
.head .method{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:13px}
.head .id{color:var(--muted);font-size:12px}
.link{font-size:12px;margin-left:6px}
.link.none{color:var(--bad)}
.k-error .head .kind{color:var(--bad)}
.body{margin-top:2px;white-space:pre-wrap}
.note{font-size:12px;color:var(--muted)}
.finding{margin:4px 0;padding:3px 7px;border-radius:5px;background:var(--bad-bg);color:var(--bad);border:1px solid #eba39c;font-size:13px;white-space:pre-wrap}
.difference{margin:4px 0;padding:5px 8px;border-radius:6px;background:var(--diff-bg);border:2px solid var(--diff);color:#4a148c}
.difference pre{color:var(--fg)}
.badge{font-size:11px;padding:0 6px;border-radius:8px;margin-left:6px;text-decoration:none}
.badge.same{background:#e5e7eb;color:#374151}
.badge.only{background:var(--diff-bg);color:var(--diff)}
details.json>summary,details.deltas>summary{font-size:12px;color:var(--muted);cursor:pointer}
pre{margin:3px 0;white-space:pre-wrap;font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace;max-height:28em;overflow:auto}
details.json pre{background:#fff;border:1px solid var(--line);border-radius:4px;padding:4px 6px}
.rawtext{color:var(--bad)}
.item{margin-top:4px;border:1px solid #c9d7cf;border-radius:6px;background:#fff;padding:4px 7px}
.item-head{font-size:12px;color:#344}
.item .cmd{color:#0b3d91;font-weight:600}
.stream{background:#f7f8fa;border-radius:4px;padding:3px 6px;color:#222}
.stream-label{font-size:11px;color:var(--muted)}
.it-reasoning .stream{font-style:italic;color:#555}
.deltas ol{margin:2px 0;padding-left:20px;font-size:11px;max-height:18em;overflow:auto}
.deltas code{overflow-wrap:anywhere}
details.turn{margin:10px 0;border:1px solid #b8c2cc;border-radius:8px;background:#fff}
details.turn>summary{padding:6px 10px;background:#f0f3f6;border-radius:8px;cursor:pointer}
details.turn[open]>summary{border-bottom:1px solid var(--line);border-radius:8px 8px 0 0}
.turn-body{padding:4px 8px}
.status{padding:0 7px;border-radius:8px;font-size:12px;background:#e5e7eb}
.s-completed{background:#d7f0df;color:#1b5e20}.s-failed{background:var(--bad-bg);color:var(--bad)}
.s-interrupted{background:#fff3cd;color:#7a5b00}.s-not-completed{background:#fde2c8;color:#8a4b00}
.err,.cut{color:var(--bad)}
#against{max-width:1400px;margin:0 auto;padding:0 18px 40px}
#against>details>summary{cursor:pointer;padding:6px 0}
.orow{padding:3px 6px;border-bottom:1px solid #eee;font-size:13px}
.orow .ln{font:12px ui-monospace,monospace;color:var(--muted);display:inline-block;min-width:3em}
.orow .dir{font-size:11px;color:var(--muted)}
.only-findings .row:not(.has-finding):not(.event){display:none}
.hide-noise .row.noise{display:none}
.flash{outline:3px solid #f5b400;outline-offset:2px}
"##;

pub(super) const SCRIPT: &str = r##"
(function(){
  function reveal(el){for(var e=el;e;e=e.parentElement){if(e.tagName==='DETAILS'){e.open=true;}}}
  function go(){
    var id=decodeURIComponent(location.hash.slice(1));
    if(!id){return;}
    var el=document.getElementById(id);
    if(!el){return;}
    reveal(el);
    el.scrollIntoView({block:'center'});
    el.classList.add('flash');
    setTimeout(function(){el.classList.remove('flash');},1500);
  }
  window.addEventListener('hashchange',go);
  document.addEventListener('click',function(ev){
    var a=ev.target.closest&&ev.target.closest('a[href^="#"]');
    if(a&&a.getAttribute('href')===location.hash){go();}
    var b=ev.target.closest&&ev.target.closest('button[data-act]');
    if(b){
      var open=b.getAttribute('data-act')==='expand';
      document.querySelectorAll('details').forEach(function(d){d.open=open;});
    }
  });
  document.querySelectorAll('input[data-toggle]').forEach(function(c){
    c.addEventListener('change',function(){document.body.classList.toggle(c.getAttribute('data-toggle'),c.checked);});
  });
  go();
})();
"##;
