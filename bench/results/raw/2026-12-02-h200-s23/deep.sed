s/kPrefillRecordStages/12/g
s/kPrefillDecodedStages/8/g
