#!/bin/bash
# The interpreter the gate runs on as root (docs/github.md): a copy, owned by root, of the one
# setup-python installed, which is the runner's to write (a restored cache or an earlier job on a self-hosted
# runner could have left a sitecustomize.py in its library, and `-I` does not stop site from importing it).
#
#     python.sh SETUP_PYTHON TARGET      (as root; prints the copy's executable)
#
# Copied: the executable, its standard library (lib/pythonX.Y, with lib-dynload and site-packages) and its
# libpython. Left out (each named on stderr): what site runs at start-up (sitecustomize and usercustomize
# modules, .pth files) and links that lead out of the copy. Then checked, or the step fails: every library the
# executable loads is the copy's or root's, and the copy starts on its own library only.
set -euo pipefail
source=$(realpath -e "$1")
name=$(basename "$source")
target=$2
if [[ ! $name =~ ^python3\.[0-9]+$ ]]; then
  echo "gate: $1 is $source, not a pythonX.Y executable of a Python installation" >&2
  exit 1
fi
prefix=$(dirname "$(dirname "$source")")
if [ ! -f "$prefix/lib/$name/os.py" ]; then
  echo "gate: no standard library at $prefix/lib/$name for $source" >&2
  exit 1
fi
install -d -m 0755 "$target/bin" "$target/lib"
cp "$source" "$target/bin/$name"
ln -s "$name" "$target/bin/python3"
cp -R "$prefix/lib/$name" "$target/lib/$name"
for library in "$prefix/lib/lib$name"*.so* "$prefix/lib/libpython3.so"; do
  if [ -e "$library" ] || [ -L "$library" ]; then cp -P "$library" "$target/lib/"; fi
done
while IFS= read -r -d '' link; do
  case "$(realpath -m "$link")" in
    "$target"/*) ;;
    *) echo "gate: left out of the copied interpreter (a link out of it): ${link#"$target/"}" >&2; rm "$link" ;;
  esac
done < <(find "$target" -type l -print0)
# On sys.path at start-up: the library (depth 1), lib-dynload and site-packages (depth 2).
while IFS= read -r -d '' hook; do
  echo "gate: left out of the copied interpreter (run by site at start-up): ${hook#"$target/"}" >&2
  rm -rf "$hook"
done < <(find "$target/lib/$name" -maxdepth 2 \( -name 'sitecustomize*' -o -name 'usercustomize*' \
           -o -name '*.pth' \) -print0)
chown -R 0:0 "$target"
chmod -R go-w "$target"
python="$target/bin/$name"
loaded=$(ldd "$python" 2>&1) || { echo "gate: cannot list the libraries of $python: $loaded" >&2; exit 1; }
if grep -q "not found" <<<"$loaded"; then
  echo "gate: the copied interpreter misses a library: $loaded" >&2
  exit 1
fi
for library in $(grep -o '=> /[^ ]*' <<<"$loaded" | cut -c4-); do
  case "$(realpath -e "$library")" in
    "$target"/*) ;;
    *) if [ -n "$(find "$(realpath -e "$library")" -maxdepth 0 \( ! -user 0 -o -perm /022 \))" ]; then
         echo "gate: the copied interpreter loads $library, which root does not own alone (an absolute RPATH" \
              "into setup-python's installation?)" >&2
         exit 1
       fi ;;
  esac
done
found=$("$python" -I -c 'import sys; print(sys.base_prefix); print(*[p for p in sys.path if p], sep="\n")')
while IFS= read -r place; do
  case "$place" in
    "$target" | "$target"/*) ;;
    *) echo "gate: the copied interpreter reads $place, outside its copy: $found" >&2; exit 1 ;;
  esac
done <<<"$found"
echo "$python"
