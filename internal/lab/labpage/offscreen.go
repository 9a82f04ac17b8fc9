package labpage

// OffScreen is a script for the page, run in a browser: it returns, joined
// by "; ", what of the first order's row is not wholly on screen (each cell,
// and each header of an execution or an effect), and whether the table
// scrolls sideways; "" when everything is visible. Projector mode promises
// that the whole row fits: the browser tests hold it at 1920x1080 and
// 1280x720.
const OffScreen = `(() => {
	const vw = document.documentElement.clientWidth, vh = document.documentElement.clientHeight, bad = [];
	const cells = [...document.querySelectorAll('#orders tbody tr:first-child td, #orders th.key')];
	for (const c of cells) {
		const r = c.getBoundingClientRect(), v = getComputedStyle(c);
		const name = (c.tagName === "TH" ? "header " : "cell ") + (c.dataset.effect || c.dataset.execution || c.textContent);
		if (v.display === "none" || v.visibility !== "visible" || r.width < 8 || r.height < 8) bad.push(name + " hidden");
		else if (r.left < 0 || r.top < 0 || r.right > vw + 0.5 || r.bottom > vh + 0.5) bad.push(name + " at " + [r.left, r.top, r.right, r.bottom].map(Math.round).join(",") + " outside " + vw + "x" + vh);
	}
	const sc = document.querySelector("#orders").parentElement;
	if (sc.scrollWidth > sc.clientWidth + 1) bad.push("the table scrolls sideways: " + sc.scrollWidth + " in " + sc.clientWidth);
	return bad.join("; ");
})()`
