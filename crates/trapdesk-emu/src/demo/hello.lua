-- Prints its arguments, one per line: try `programs/hello.lua one "two words" 3` with F6.
print(("hello from %s, %d argument(s)"):format(os.getComputerLabel() or "an unlabelled computer", select("#", ...)))
for i, a in ipairs({ ... }) do
    print(i, a)
end
