#!/usr/bin/env bash
# Refresh the JavaScript the static book needs offline (see book/_vendor/README.md).
#
#   bash scripts/vendor_assets.sh                       # the pinned versions below
#   MATHJAX=3.2.2 HTML_MANAGER=1.0.15 REQUIREJS=2.3.8 bash scripts/vendor_assets.sh
#
# Needs npm (it only runs `npm pack`, which downloads a package's tarball from the registry;
# nothing is installed). Rewrites book/_vendor/static/vendor/{mathjax,requirejs,jupyter-widgets}/
# from scratch; the hand-written book/_vendor/static/vendor/widgets-setup.js stays.
set -euo pipefail
cd "$(dirname "$0")/.."

MATHJAX=${MATHJAX:-3.2.2}
HTML_MANAGER=${HTML_MANAGER:-1.0.15}   # 1.x pairs with ipywidgets 8 (@jupyter-widgets/controls 5.x)
REQUIREJS=${REQUIREJS:-2.3.8}

dest=book/_vendor/static/vendor
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

(cd "$tmp" && npm pack --silent "mathjax@$MATHJAX" "@jupyter-widgets/html-manager@$HTML_MANAGER" \
    "requirejs@$REQUIREJS" >/dev/null)
for pkg in mathjax html-manager requirejs; do
    mkdir -p "$tmp/$pkg"
    tar xzf "$tmp"/*"$pkg"-*.tgz -C "$tmp/$pkg"
done

rm -rf "$dest/mathjax" "$dest/requirejs" "$dest/jupyter-widgets"
mkdir -p "$dest/mathjax/output/chtml/fonts" "$dest/mathjax/input/tex" "$dest/requirejs" \
    "$dest/jupyter-widgets"

# MathJax 3: the TeX-input/CommonHTML-output component, its web fonts, and the TeX
# extensions it autoloads on demand (\boldsymbol, \cancel, ...).
mj="$tmp/mathjax/package/es5"
cp "$mj/tex-chtml.js" "$dest/mathjax/"
cp -r "$mj/output/chtml/fonts/woff-v2" "$dest/mathjax/output/chtml/fonts/"
cp -r "$mj/input/tex/extensions" "$dest/mathjax/input/tex/"
cp "$tmp/mathjax/package/LICENSE" "$dest/mathjax/"

# RequireJS (the AMD loader embed-amd.js needs).
cp "$tmp/requirejs/package/require.js" "$dest/requirejs/"

# ipywidgets' HTML manager: the AMD bundle (base + controls + output built in) and the
# Font Awesome fonts its CSS points to (woff2/woff only: every browser we target has them).
hm="$tmp/html-manager/package/dist"
cp "$hm/embed-amd.js" "$hm"/*.woff2 "$hm"/*.woff "$dest/jupyter-widgets/"

du -sh "$dest"
echo "vendored mathjax@$MATHJAX @jupyter-widgets/html-manager@$HTML_MANAGER requirejs@$REQUIREJS into $dest"
echo "update the versions in book/_vendor/README.md (and scripts/vendor_assets.sh defaults)"
