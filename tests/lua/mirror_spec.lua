-- mirror_spec: the terminal mirror records what a (fake) native terminal is told to draw.
local mirror = dofile(ROOT .. "apis/mirror.lua")

local function eq(a, b, msg)
    if a ~= b then error((msg or "mismatch") .. ": expected " .. tostring(b) .. ", got " .. tostring(a), 2) end
end

-- A fake native terminal, 5 x 3 until resized, that only counts calls (the mirror must
-- still call it).
local calls = 0
local fake = {}
local cx, cy, tcol, bcol = 1, 1, 1, 32768
local W, H = 5, 3
function fake.getSize() return W, H end
function fake.getCursorPos() return cx, cy end
function fake.setCursorPos(x, y) calls = calls + 1 cx, cy = x, y end
function fake.getCursorBlink() return false end
function fake.setCursorBlink() calls = calls + 1 end
function fake.getTextColour() return tcol end
function fake.getBackgroundColour() return bcol end
function fake.setTextColour(c) calls = calls + 1 if c ~= 2 ^ math.floor(math.log(c) / math.log(2) + 0.5) then error("Invalid colour", 2) end tcol = c end
function fake.setBackgroundColour(c) calls = calls + 1 bcol = c end
function fake.isColour() return true end
function fake.write(s) calls = calls + 1 cx = cx + #tostring(s) end
function fake.blit(s) calls = calls + 1 cx = cx + #s end
function fake.clear() calls = calls + 1 end
function fake.clearLine() calls = calls + 1 end
function fake.scroll() calls = calls + 1 end
local pal = {}
function fake.getPaletteColour(c) local p = pal[c] or { 0, 0, 0 } return p[1], p[2], p[3] end
function fake.setPaletteColour(c, r, g, b) calls = calls + 1 pal[c] = { r, g, b } end

local rec = mirror.install(fake)
local first = rec.take(true)
eq(first.full, true, "first frame is full")
eq(#first.rows, 3, "every row")
eq(first.rows[1].text, "     ", "unknown cells are blank")

-- write, clipped at the right edge, in the current colours.
fake.setCursorPos(4, 1)
fake.setTextColour(16384) -- red, blit e
fake.write("abc")
local text, fg, bg = rec.rows()
eq(text[1], "   ab", "clipped write")
eq(fg[1], "000ee", "text colour")
eq(bg[1], "fffff", "background")
local u = rec.take(false)
eq(u.full, false, "an update")
eq(#u.rows, 1, "only the changed row")
eq(u.rows[1].y, 1)
eq(u.cursor.x, 7, "cursor moves past the edge as CC's does")
eq(rec.take(false), nil, "nothing changed, nothing to send")

-- blit keeps its own colours; a bad colour raises before anything is recorded.
fake.setCursorPos(1, 2)
fake.blit("xyz", "123", "abc")
text, fg, bg = rec.rows()
eq(text[2], "xyz  ")
eq(fg[2]:sub(1, 3), "123")
eq(bg[2]:sub(1, 3), "abc")
assert(not pcall(fake.setTextColour, 3), "the original's error comes through")

-- scroll moves rows up and blanks the bottom one; a CC character (0-255) stays one cell.
fake.setCursorPos(1, 3)
fake.write("\143")
fake.scroll(1)
text = rec.rows()
eq(text[1], "xyz  ", "row 2 moved up")
eq(text[2], "\143    ", "row 3 moved up")
eq(text[3], "     ", "new bottom row")
local all = rec.take(false)
eq(#all.rows, 3, "scroll changes every row")
eq(all.rows[2].text, "\194\143    ", "sent as UTF-8 of the Latin-1 byte")

-- palette changes are sent with the update.
fake.setPaletteColour(1, 1, 0, 0)
eq(rec.take(false).palette[1], "ff0000")

-- A resize keeps what fits, as CC's terminal does, and the next take is a whole frame.
rec.take(false)
W, H = 3, 2
eq(rec.checkSize(), true, "a new size is seen")
eq(rec.checkSize(), false, "once")
text, fg = rec.rows()
eq(#text, 2, "rows cut")
eq(text[1], "xyz", "columns cut")
local f = rec.take(false)
eq(f.full, true, "a resize sends a whole frame")
eq(f.width, 3)
eq(#f.rows, 2)
-- Drawing outside the recorded size re-reads it (multishell keeps term_resize from its tabs):
-- a grown terminal is recorded from its first draw, new cells blank in the current colours.
W, H = 6, 4
fake.setTextColour(2) -- orange, blit 1
fake.setCursorPos(1, 4)
fake.write("grown")
text, fg = rec.rows()
eq(#text, 4, "rows added")
eq(text[1], "xyz   ", "kept, padded")
eq(fg[1]:sub(4), "111", "padding in the current text colour")
eq(text[4], "grown ", "drawn on the new row")
eq(rec.take(false).height, 4)
fake.setTextColour(1)
W, H = 5, 3

-- A colour that is not a power of two counts by its highest set bit, as CC: Tweaked's
-- parseColour does: 6 (bits 1 and 2) is colour 2, blit "2", where a rounded log2 says 3.
fake.setCursorPos(1, 1)
fake.setBackgroundColour(6)
fake.write("c")
local _, _, bgs = rec.rows()
eq(bgs[1]:sub(1, 1), "2", "highest set bit")
fake.setBackgroundColour(32768)

-- A second install wraps the originals, and the first one's uninstall leaves it alone.
local rec2 = mirror.install(fake)
mirror.uninstall(fake, rec)
fake.setCursorPos(1, 1)
fake.write("Q")
eq((rec2.rows())[1], "Q    ", "the newer record still records")
mirror.uninstall(fake, rec2)
local before = calls
fake.write("x")
eq(calls, before + 1, "the original is back")
eq(rawget(fake, "__trapdeskOriginal"), nil)
