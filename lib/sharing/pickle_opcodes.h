#pragma once
// The pickle opcodes medseg reads (torch_pickle.h) and writes (torch_save.h), by their names in Python's
// Lib/pickle.py, as torch/csrc/jit/serialization/pickler_helper.h names its own (PickleOpCode).
#include <cstdint>

namespace medseg::sharing {

enum class PickleOp : unsigned char {
  Mark = '(',
  Stop = '.',
  BinFloat = 'G',
  BinInt = 'J',
  BinInt1 = 'K',
  BinInt2 = 'M',
  None = 'N',
  BinPersId = 'Q',
  Reduce = 'R',
  BinString = 'T',
  ShortBinString = 'U',
  BinUnicode = 'X',
  Append = 'a',
  Build = 'b',
  Global = 'c',
  Dict = 'd',
  EmptyDict = '}',
  Appends = 'e',
  BinGet = 'h',
  LongBinGet = 'j',
  List = 'l',
  EmptyList = ']',
  BinPut = 'q',
  LongBinPut = 'r',
  SetItem = 's',
  Tuple = 't',
  EmptyTuple = ')',
  SetItems = 'u',
  BinBytes = 'B',
  ShortBinBytes = 'C',
  // protocol 2
  Proto = 0x80,
  Tuple1 = 0x85,
  Tuple2 = 0x86,
  Tuple3 = 0x87,
  NewTrue = 0x88,
  NewFalse = 0x89,
  Long1 = 0x8a,
  // protocol 4
  ShortBinUnicode = 0x8c,
  BinUnicode8 = 0x8d,
  StackGlobal = 0x93,
  Memoize = 0x94,
  Frame = 0x95,
};

// The opcode as the byte a pickle holds.
constexpr char op_char(PickleOp op) { return static_cast<char>(static_cast<unsigned char>(op)); }

}  // namespace medseg::sharing
