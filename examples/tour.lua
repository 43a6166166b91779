-- A tour of CuTe's layout algebra in cuteluajit.  Run: cuteluajit examples/tour.lua
local cute = require("cute")

local function show(label, v) print(("%-46s %s"):format(label, cute.tostring(v))) end

print("== Layouts: a shape and a stride; L(coordinate) -> index")
local L = cute.make_layout({ 4, { 2, 3 } })
show("make_layout({4,{2,3}})", L)
show("  size / cosize / rank / depth", { L:size(), L:cosize(), L:rank(), L:depth() })
show("  L(5), L(1,1), L({1,{1,2}})", { L(5), L(1, 1), L({ 1, { 1, 2 } }) })
show("row-major make_layout_right({4,8})", cute.make_layout_right({ 4, 8 }))
cute.print_layout(cute.make_layout({ 4, 8 }, { 8, 1 }))

print("\n== Coalesce and filter")
show("coalesce((2,(1,6)):(1,(6,2)))", cute.coalesce(cute.parse("(2,(1,6)):(1,(6,2))")))
show("filter((4,2,3):(1,0,4))", cute.filter(cute.parse("(4,2,3):(1,0,4)")))

print("\n== Composition: R(c) = A(B(c))")
local A = cute.make_layout({ 6, 2 }, { 8, 2 })
local B = cute.make_layout({ 4, 3 }, { 3, 1 })
show("composition((6,2):(8,2), (4,3):(3,1))", cute.composition(A, B))
show("by-mode tiler (3:4, 2)", cute.composition(cute.make_layout({ 12, 8 }), { cute.make_layout(3, 4), 2 }))

print("\n== Complement and inverses")
show("complement(4:2, 24)", cute.complement(cute.make_layout(4, 2), 24))
show("right_inverse((4,8):(8,1))", cute.right_inverse(cute.make_layout({ 4, 8 }, { 8, 1 })))
show("left_inverse((4,8):(8,1))", cute.left_inverse(cute.make_layout({ 4, 8 }, { 8, 1 })))

print("\n== Divides: split a 2-D layout into 4x2 tiles")
local M = cute.make_layout({ 8, 6 })
local tiler = { cute.make_layout(4), cute.make_layout(2) }
show("logical_divide((8,6):(1,8), (4,2))", cute.logical_divide(M, tiler))
show("zipped_divide", cute.zipped_divide(M, tiler))
show("tiled_divide", cute.tiled_divide(M, tiler))
show("local_tile(M, (4,2), (1,2))", cute.local_tile(M, { 4, 2 }, { 1, 2 }))

print("\n== Products: repeat a tile")
local T = cute.make_layout({ 2, 2 }, { 1, 2 })
show("blocked_product((2,2):(1,2), (3,2))", cute.blocked_product(T, cute.make_layout({ 3, 2 })))
show("raked_product((2,2):(1,2), (3,2))", cute.raked_product(T, cute.make_layout({ 3, 2 })))
cute.print_layout(cute.blocked_product(T, cute.make_layout({ 3, 2 })))

print("\n== Swizzles: Sw<3,4,3> o (8,64):(64,1), the classic 128-byte smem swizzle")
local SW = cute.make_composed_layout(cute.make_swizzle(3, 4, 3), 0, cute.make_layout({ 8, 64 }, { 64, 1 }))
show("composed layout", SW)
local row = {}
for j = 0, 7 do row[#row + 1] = SW({ j, 0 }) end
show("  first element of each row", row)

print("\n== Slicing")
local S, off = cute.slice_and_offset({ 2, cute._ }, cute.make_layout({ 4, 8 }, { 8, 1 }))
show("slice_and_offset((2,_), (4,8):(8,1))", { S, off })
