s/kPrefillRecordStages/12/g
